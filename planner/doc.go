// Package planner holds small helpers shared by the formulation packages under planner/
// (ppipe, cascade, qlm, pard, dyorc): default SLO rules and the canonical input digest that
// every plan records in its provenance.
package planner

import (
	"cmp"

	"github.com/plan-dev/plan/formats"
)

// DefaultSLOScale is PPipe's SLO rule: T = 5 × the reference whole-model latency at batch 1.
const DefaultSLOScale = 5.0

// ReferenceGPU is the GPU type whose batch-1 latency defines the default SLO when a profile
// has it (PPipe §7.1 uses L4 even on V100 clusters).
const ReferenceGPU = "L4"

// ReferenceLatencyUs returns the whole-model latency at batch 1 on a whole GPU of the
// reference type: L4 when profiled, otherwise the fastest GPU type among those accepted by
// use (nil accepts all). It prefers a measured whole-model TotalUs over the block sum,
// because block sums slightly exceed whole-model latency (FCN on L4: 6.9 ms over the
// authors' blocks vs 6.66 ms whole, PPipe §7.5). It returns the GPU used and false when no
// batch-1 whole-GPU entry exists.
func ReferenceLatencyUs(m *formats.ModelProfile, use func(gpu string) bool) (float64, string, bool) {
	whole := func(e *formats.LatencyEntry) float64 {
		if e.TotalUs > 0 {
			return e.TotalUs
		}
		return e.WholeUs()
	}
	if e, ok := m.Lookup(ReferenceGPU, 1, 1); ok && (use == nil || use(ReferenceGPU)) {
		return whole(e), ReferenceGPU, true
	}
	best, gpu, found := 0.0, "", false
	for i := range m.Latency {
		e := &m.Latency[i]
		if e.VGPU != 1 || e.Batch != 1 || (use != nil && !use(e.GPU)) {
			continue
		}
		if w := whole(e); !found || w < best {
			best, gpu, found = w, e.GPU, true
		}
	}
	return best, gpu, found
}

// InputDigest is the digest recorded in Provenance.InputDigest: the sha256 of the canonical
// JSON of the embedded inputs (profiles restricted to the models used, the cluster and the
// effective workload with every default resolved). Two plans with the same digest were solved
// from the same data.
func InputDigest(in *formats.EmbeddedInputs) (string, error) {
	return formats.Digest(in)
}

// ToolVersion is the tool version a plan records in its provenance: v, or "dev" when the
// caller sets none.
func ToolVersion(v string) string { return cmp.Or(v, "dev") }
