package dataplane

import (
	"fmt"
	"math"

	"github.com/plan-dev/plan/formats"
)

// Validate checks the deployment's internal consistency (indices in range, pools consistent
// with workers, latency tables present).
func (d *Deployment) Validate() error {
	var errs formats.ErrorList
	add := func(path string, value any, rule string) {
		errs = append(errs, &formats.FieldError{Path: path, Value: fmt.Sprint(value), Rule: rule})
	}
	if len(d.Apps) == 0 {
		add("apps", 0, "a deployment needs at least one application")
	}
	for i, a := range d.Apps {
		if a.SLO <= 0 {
			add(fmt.Sprintf("apps[%d].slo", i), a.SLO, "must be > 0")
		}
		for _, s := range a.Entry {
			if int(s) < 0 || int(s) >= len(d.Stages) {
				add(fmt.Sprintf("apps[%d].entry", i), s, "no such stage")
			}
		}
	}
	for i := range d.Stages {
		s := &d.Stages[i]
		p := fmt.Sprintf("stages[%d]", i)
		if int(s.App) < 0 || int(s.App) >= len(d.Apps) {
			add(p+".app", s.App, "no such application")
		}
		if len(s.LatUs) < 2 {
			add(p+".lat_us", len(s.LatUs), "needs latencies for batch 1 and up")
		}
		for b, l := range s.LatUs {
			if l < 0 {
				add(fmt.Sprintf("%s.lat_us[%d]", p, b), l, "must be >= 0 (stage "+s.Name+")")
				break
			}
		}
		if x := s.XferPerSampleUs; x < 0 || math.IsNaN(x) || math.IsInf(x, 0) {
			add(p+".xfer_per_sample_us", x, "must be finite and >= 0 (stage "+s.Name+")")
		}
		if s.Batch < 1 {
			add(p+".batch", s.Batch, "must be >= 1")
		}
		for _, n := range s.Next {
			if int(n) < 0 || int(n) >= len(d.Stages) {
				add(p+".next", n, "no such stage")
			}
		}
		for _, w := range s.Pool {
			if int(w) < 0 || int(w) >= len(d.Topo.Workers) {
				add(p+".pool", w, "no such worker")
			} else if d.Topo.Workers[w].Stage != StageID(i) {
				add(p+".pool", w, "worker belongs to another stage")
			}
		}
	}
	for i, w := range d.Topo.Workers {
		if int(w.Server) < 0 || int(w.Server) >= len(d.Topo.Servers) {
			add(fmt.Sprintf("workers[%d].server", i), w.Server, "no such server")
		}
		if w.VGPU < 1 {
			add(fmt.Sprintf("workers[%d].vgpu", i), w.VGPU, "must be >= 1")
		}
	}
	return errs.Err()
}

// hasFanOut reports whether application a has a stage with several successors (a DAG whose
// branches hold a request concurrently). It is only consulted for a request that is already
// in flight, so its cost does not matter on the common path.
func (d *Deployment) hasFanOut(a AppID) bool {
	for i := range d.Stages {
		if d.Stages[i].App == a && len(d.Stages[i].Next) > 1 {
			return true
		}
	}
	return false
}

// Emulated returns the result an emulated worker reports for request r after stage st, and
// whether the stage needs one (a routed stage, or a deployment with its own emulator).
func (d *Deployment) Emulated(st StageID, r *Request, u float64) (Result, bool) {
	s := &d.Stages[st]
	if d.Emulate != nil {
		return d.Emulate(s, r, u), true
	}
	if !s.Routed {
		return Result{}, false
	}
	res := Result{Label: -1}
	acc := 0.0
	for i, p := range s.NextProb {
		acc += p
		if u < acc || i == len(s.NextProb)-1 {
			res.Branch = int32(i)
			return res, true
		}
	}
	res.Exit = len(s.Next) == 0
	return res, true
}

// TraceKey is the number that keys request r's per-request draws (emulated outcomes, the
// ingress worker of a workflow): its index in its application's trace when the driver knows it
// (Attrs.Trace), else its ID. The simulator numbers requests in arrival order, but serve
// numbers them in the order they reach it, and two requests arriving within a millisecond
// can reach it in either order; keyed on their trace index they draw alike in both.
func TraceKey(r *Request) int64 {
	if r.Attrs.Trace > 0 {
		return r.Attrs.Trace - 1
	}
	return int64(r.ID)
}

// EmulatedU is the uniform number in [0, 1) that drivers hand Deployment.Emulated for
// request r finishing its current batch at stage st: a function of the request's trace key
// (TraceKey), the stage and how many batches the request has been in (a loop that revisits a
// stage draws afresh), and of nothing else. So the simulator and serve's emulated workers make
// the same choice for the same request of the same trace, whatever order batches complete in
// (splitmix64).
func EmulatedU(r *Request, st StageID) float64 {
	x := uint64(uint32(TraceKey(r)))*0x9e3779b97f4a7c15 + uint64(uint32(st))<<20 + uint64(r.nBatch) + 0x632be59bd9b4e019
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / (1 << 53)
}

// maxWorkFactor bounds Deployment.Work's result relative to the nominal (far above any
// data-dependent spread).
const maxWorkFactor = 1e3

// ScaledDuration is the duration an emulated worker takes for a batch of reqs at stage st
// whose nominal duration is nominal: the deployment's Work model's, when it has one.
func (d *Deployment) ScaledDuration(st StageID, reqs []*Request, nominal Time) Time {
	if d.Work == nil || nominal <= 0 {
		return nominal
	}
	t := d.Work(&d.Stages[st], reqs, nominal)
	if t < 0 || float64(t) > maxWorkFactor*float64(nominal) {
		// A negative or absurd duration is a bug in the system's model (its own tests check
		// the range): keep the clock sane rather than run it backwards or overflow it.
		return nominal
	}
	return t
}

// SkipCoin is the deterministic coin of conditional stages: a uniform number in [0, 1) that
// is a function of (seed, request, stage) alone, so a request skips the same stages in the
// simulator and in serve, in any event order (splitmix64 over the three).
func SkipCoin(seed uint64, r ReqID, s StageID) float64 {
	x := seed ^ uint64(uint32(r))<<24 ^ uint64(uint32(s)) ^ 0x9e3779b97f4a7c15
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / (1 << 53)
}
