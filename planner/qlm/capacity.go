package qlm

import (
	"fmt"
	"maps"
	"math"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
	"github.com/plan-dev/plan/planner"
)

// The capacity model of a QLM plan (the autopilot sizes a plan by the most it
// serves). A QLM plan states its workload's rates, not what its instances serve, so the
// capacity is derived here from the rule the cost objective already sizes fleets by
// (Capacity, CostSLOFraction): an instance runs requests of a size at the batch whose
// request lifetime — the decode iterations of the request plus the prefills of the batch
// turning over during it (QLM §3, Eq. 1–4: C = W + P + D with Θ nearly constant under
// continuous batching) — stays within f·SLO, the rest of the end-to-end deadline (QLM §1:
// the SLO is the request's deadline, not TTFT or TPOT) being queueing headroom.
//
// The class's token lengths are a 3×3 grid of size buckets (ClassBuckets). A bucket's batch
// B is the one its longer requests (the tercile's upper edge) keep within f·SLO; by Little's
// law the instance turns B sequences over once per mean lifetime L(B) at the bucket's centre,
// so a request of the bucket takes L(B)/B of the instance's time. At the plan's class mix an
// instance serves 1 / Σ_b w_b·L_b(B_b)/B_b requests per second, w_b being the bucket's share
// of its model's requests (QLM §4: the virtual queues time-share an instance between the
// request groups of its model). A model's capacity is the sum over its instances — it grows
// with the instances a plan has, which is what lets the autopilot size a plan on a shrunken
// cluster — and each class gets its share of it. Measured against `plan simulate` on the
// autopilot fixture (testdata/autopilot/qlm-plan.json) it is about 14% high (the engine runs
// a step holding a prefill chunk at the prefill curve for all its tokens); the rule at the
// upper edges alone (Capacity's rate, as the cost objective sizes) is 26% low.

// PlanCapacity is the most each class (a QLM deployment's application) of plan p serves
// within its SLO at the plan's class mix on the plan's instances, in requests per second,
// keyed by class name. A class whose model no instance hosts serves 0. The mix is the
// embedded workload's rate_rps per class (classes of a model all at 0: equal shares). On a
// heterogeneous fleet every instance serves the whole mix of its model (the routes of a
// cost plan, which send each size to its best GPU type, serve at least as much): a lower
// bound there.
func PlanCapacity(p *formats.Plan) (map[string]float64, error) {
	if qlmsec.PlanOf(p) == nil {
		return nil, fmt.Errorf("qlm: the plan has no qlm section")
	}
	e := p.Provenance.Embedded
	if e == nil || e.Workload == nil || len(llmspec.ClassesOf(e.Workload)) == 0 || len(e.Profiles) == 0 {
		return nil, fmt.Errorf("qlm: provenance.embedded: the plan embeds no llm_classes workload or LLM profiles: its capacity is unknown")
	}
	var rec Flags
	if err := planner.ReadOptions(p.Provenance.Options, &rec); err != nil {
		return nil, fmt.Errorf("qlm: provenance.options: %w", err)
	}
	profs := make([]*formats.Profile, len(e.Profiles))
	for i := range e.Profiles {
		profs[i] = &e.Profiles[i]
	}
	// The mix: each class's share of its model's requests.
	w := *e.Workload
	w.Sections = maps.Clone(w.Sections) // a copy: its own sections
	llmspec.SetClasses(&w, append([]llmspec.LLMClass(nil), llmspec.ClassesOf(&w)...))
	total := map[string]float64{}
	for _, c := range llmspec.ClassesOf(&w) {
		total[c.Model] += math.Max(c.RateRPS, 0)
	}
	for i := range llmspec.ClassesOf(&w) {
		c := &llmspec.ClassesOf(&w)[i]
		if total[c.Model] > 0 {
			c.RateRPS = math.Max(c.RateRPS, 0) / total[c.Model]
		} else {
			c.RateRPS = 1 / float64(countClasses(llmspec.ClassesOf(&w), c.Model))
		}
		if rec.SLO > 0 {
			c.SLO = rec.SLO // a cost plan solved with --slo was sized for it (SolveCost)
		}
	}
	buckets := ClassBuckets(&w)
	served := map[string]float64{}
	for i, in := range qlmsec.PlanOf(p).Instances {
		if in.Model == "" {
			continue
		}
		pr := profileForCount(profs, in.Model, in.GPU, in.GPUCount)
		if pr == nil {
			return nil, fmt.Errorf("qlm: qlm.instances[%d]: model %s has no LLM profile on %s among the embedded profiles", i, in.Model, GPUSet(in))
		}
		served[in.Model] += MixRate(pr, buckets, in.Model, CostSLOFraction)
	}
	out := make(map[string]float64, len(llmspec.ClassesOf(&w)))
	for _, c := range llmspec.ClassesOf(&w) {
		// c.RateRPS is the class's share of its model's requests here.
		out[c.Name] += served[c.Model] * c.RateRPS
	}
	return out, nil
}

// MixRate is the request rate one instance of pr sustains for model's buckets in their mix
// (each bucket's Rate its share of the model's requests): 1 / Σ_b share_b·L_b(B_b)/B_b, B_b
// the batch the capacity rule allows the bucket's upper edge at f·SLO and L_b its lifetime at
// the bucket's centre. 0 when some bucket of the mix cannot meet its SLO on pr at any batch.
func MixRate(pr *formats.LLMProfile, buckets []Bucket, model string, f float64) float64 {
	m := newLifeModel(pr)
	var perReq, shares float64
	for _, b := range buckets {
		if b.Model != model || b.Rate <= 0 {
			continue
		}
		ci, co := b.Input, b.Output
		if b.CapInput > 0 {
			ci, co = b.CapInput, b.CapOutput
		}
		_, batch := Capacity(pr, ci, co, b.SLO, f)
		if batch <= 0 {
			return 0
		}
		// Little's law: the batch turns over once per mean lifetime (the bucket's centre);
		// the batch itself is the one whose longer requests (the upper edge) meet f·SLO.
		perReq += b.Rate * m.lifeUs(float64(batch), b.Input, b.Output) / 1e6 / float64(batch)
		shares += b.Rate
	}
	if perReq <= 0 {
		return 0
	}
	return shares / perReq
}

func countClasses(cls []llmspec.LLMClass, model string) int {
	n := 0
	for _, c := range cls {
		if c.Model == model {
			n++
		}
	}
	return n
}
