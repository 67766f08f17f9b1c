package dyorc

import (
	"math"

	"github.com/plan-dev/plan/dataplane"
)

// work is the deployment's model of data-dependent work (dataplane.Deployment.Work). A
// service with spread s gives each request a factor f drawn from U(1−s, 1+s) at each call
// (an LLM's output length relative to the profile's), and a batch of N items whose nominal
// is base + per_item·N takes
//
//	base·max(f) + per_item·Σ f
//
// over its items: the batch's fixed cost per decoding step runs until its longest output
// ends, while each item's own cost follows its own length. With every f = 1 this is the
// nominal. The scheduler plans at the nominal and sees the real end only when the batch
// finishes, as with a real LLM whose output length nobody knows in advance.
//
// DyOrc batches a service across workflows (§5.1): one GPU batch is several engine
// batches, one per stage, all planned at the joint batch's nominal. Each engine batch here
// draws the factors of its own requests and counts the other stages' items at their
// expectation (f = 1): exact when a GPU batch serves one stage, and otherwise each part
// ends when its own longest output would, with the GPU free once the last part ends.
func (m *Meta) work(st *dataplane.Stage, reqs []*dataplane.Request, nominal dataplane.Time) dataplane.Time {
	if st.Model == "" || st.Index < 0 || len(reqs) == 0 {
		return nominal // the ingress hop (no service)
	}
	nd := &m.W.Apps[st.App].Nodes[st.Index]
	sv := &m.W.Services[nd.Svc]
	if sv.Spread <= 0 {
		return nominal
	}
	items := max(nd.Items, 1)
	// The joint batch's size N, recovered from the nominal the policy planned.
	n := len(reqs) * items
	if sv.PerItemUs > 0 {
		n = max(n, int(math.Round((float64(nominal)-sv.BaseUs)/sv.PerItemUs)))
	}
	fmax, fsum := 0.0, 0.0
	for _, r := range reqs {
		f := workFactor(r, st, sv.Spread)
		fmax = max(fmax, f)
		fsum += f * float64(items)
	}
	own := float64(len(reqs) * items)
	t := sv.BaseUs*fmax + sv.PerItemUs*(float64(n)-own+fsum)
	return dataplane.Time(math.Ceil(t))
}

// workFactor is request r's work factor at its current call of stage st: uniform on
// [1−s, 1+s], a function of r's trace key, the stage and the call's visit (a loop's rounds
// draw afresh) alone, salted apart from the branch draw (dataplane.EmulatedU) so that a
// long output does not also pick the branch (splitmix64).
func workFactor(r *dataplane.Request, st *dataplane.Stage, s float64) float64 {
	return workFactorAt(dataplane.TraceKey(r), r.NumBatches(), st, s)
}

// workFactorAt is workFactor for the request of trace key key in its visits-th batch.
func workFactorAt(key int64, visits int, st *dataplane.Stage, s float64) float64 {
	x := uint64(key)*0xbf58476d1ce4e5b9 + uint64(st.App)<<40 + uint64(uint32(st.Index))<<20 + uint64(visits) + 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	x ^= x >> 31
	u := float64(x>>11) / (1 << 53)
	return 1 + s*(2*u-1)
}
