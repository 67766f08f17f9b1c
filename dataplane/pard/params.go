package pard

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/plan-dev/plan/dataplane"
)

// pardDefaults are the parameters and their defaults (PARD §4.2–§4.3, §5.3; windows the
// paper leaves open are ours). Every key a
// Config or plan may set is listed, so a typo is an error instead of a silent default.
var pardDefaults = map[string]float64{
	"lambda":          0.1,   // batch-wait quantile λ
	"window_s":        5,     // queueing-delay window (linear weights)
	"samples":         10000, // M, sums drawn per tick for F⁻¹(λ)
	"ring":            10000, // normalized waits kept per module
	"seed":            1,     // sampler seed
	"sync_s":          1,     // state-planner period (rate bucket)
	"smooth_window_s": 5,     // T_s: moving mean of T_in
	"eps_window_s":    30,    // ε: buckets summed
	"eps":             -1,    // fixed ε (≥ 0) instead of the measured one
	"purge":           1,     // drop hopeless requests from the min end on every fill
	"autoscale":       0,     // rate-based worker scaling
	"cold_start_s":    15,    // delay before a new worker serves
	"scale_window_s":  5,     // rate average the scaler provisions for
	"scale_down_s":    30,    // the scaler keeps capacity for the max rate over this long
	"headroom":        1,     // provision rate × headroom
	"scale_by_module": 1,     // scale each module on its own input rate (1) or on the app's (0)
	"oc_alpha":        0.4,   // pard-oc: share of input shed while throttled
	"oc_t_ms":         25,    // pard-oc: queueing-delay threshold T
	"split":           0,     // nexus: per-stage deadlines
	"cumulative":      0,     // clipper++: cumulative budgets
	"hop_in_lsub":     1,     // add downstream edges' planned hops to L_sub (not in the paper)
	"mu_window_s":     2,     // μ from the mean T_in over this long (window not in the paper)
	"sibling_cancel":  0,     // DAG: a drop on one branch cancels its siblings' work (paper: none)
}

// PARDParamNames lists the parameter names the pipeline policies accept.
func PARDParamNames() []string {
	out := make([]string, 0, len(pardDefaults))
	for k := range pardDefaults {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// NewPipeline builds the pipeline policy named name (one of PipelinePolicies) with cfg's
// parameters.
func NewPipeline(name string, cfg dataplane.Config) (*Pipeline, error) {
	for _, v := range pardVariants {
		if v.name == name {
			for k := range cfg.Params {
				if _, ok := pardDefaults[k]; !ok {
					return nil, fmt.Errorf("policy %s: unknown parameter %q (known: %v)", name, k, PARDParamNames())
				}
			}
			p := &Pipeline{variant: v, cfg: cfg}
			if _, err := p.resolve(nil); err != nil {
				return nil, err
			}
			return p, nil
		}
	}
	return nil, fmt.Errorf("unknown pipeline policy %q", name)
}

// resolve merges defaults, plan parameters and Config parameters (Config wins).
func (p *Pipeline) resolve(plan map[string]string) (map[string]float64, error) {
	out := make(map[string]float64, len(pardDefaults))
	for k, v := range pardDefaults {
		out[k] = v
	}
	set := func(src string, m map[string]string) error {
		for k, s := range m {
			if _, ok := pardDefaults[k]; !ok {
				if src == "plan" {
					continue // plans may carry parameters for other tools
				}
				return fmt.Errorf("policy %s: unknown parameter %q", p.variant.name, k)
			}
			x, err := dataplane.ParseNumber(p.variant.name, k, s)
			if err != nil {
				return err
			}
			out[k] = x
		}
		return nil
	}
	if err := set("plan", plan); err != nil {
		return nil, err
	}
	if err := set("config", p.cfg.Params); err != nil {
		return nil, err
	}
	check := func(k string, ok bool, rule string) error {
		if !ok {
			return fmt.Errorf("policy %s: parameter %s: %g: %s", p.variant.name, k, out[k], rule)
		}
		return nil
	}
	for _, c := range []error{
		check("lambda", out["lambda"] >= 0 && out["lambda"] <= 1, "must be in [0, 1]"),
		check("window_s", out["window_s"] > 0 && out["window_s"] <= 600, "must be in (0, 600]"),
		check("samples", out["samples"] >= 1 && out["samples"] <= 1e6, "must be in [1, 1e6]"),
		check("ring", out["ring"] >= 1 && out["ring"] <= 1e6, "must be in [1, 1e6]"),
		check("sync_s", out["sync_s"] > 0 && out["sync_s"] <= 60, "must be in (0, 60]"),
		check("smooth_window_s", out["smooth_window_s"] >= out["sync_s"] && out["smooth_window_s"] <= 600, "must be in [sync_s, 600]"),
		check("eps_window_s", out["eps_window_s"] >= out["sync_s"] && out["eps_window_s"] <= 3600, "must be in [sync_s, 3600]"),
		check("eps", out["eps"] < 0 || out["eps"] <= 1, "must be < 0 (measured) or in [0, 1]"),
		check("cold_start_s", out["cold_start_s"] >= 0 && out["cold_start_s"] <= 3600, "must be in [0, 3600]"),
		check("scale_window_s", out["scale_window_s"] >= 1 && out["scale_window_s"] <= 600, "must be in [1, 600]"),
		check("scale_down_s", out["scale_down_s"] >= 0 && out["scale_down_s"] <= 3600, "must be in [0, 3600]"),
		check("headroom", out["headroom"] > 0 && out["headroom"] <= 100, "must be in (0, 100]"),
		check("oc_alpha", out["oc_alpha"] >= 0 && out["oc_alpha"] < 1, "must be in [0, 1)"),
		check("oc_t_ms", out["oc_t_ms"] > 0, "must be > 0"),
		check("mu_window_s", out["mu_window_s"] >= out["sync_s"] && out["mu_window_s"] <= out["eps_window_s"], "must be in [sync_s, eps_window_s]"),
	} {
		if c != nil {
			return nil, c
		}
	}
	return out, nil
}

// TickEvery implements Ticker: the state planner's sync period.
func (p *Pipeline) TickEvery() dataplane.Time {
	s := pardDefaults["sync_s"]
	if x, ok := p.cfg.Params["sync_s"]; ok {
		if f, err := dataplane.ParseNumber(p.variant.name, "sync_s", x); err == nil && f > 0 {
			s = f
		}
	}
	return dataplane.Time(s * float64(dataplane.Second))
}

// Params returns the parameters in effect (after Attach: defaults, plan, config).
func (p *Pipeline) Params() map[string]float64 { return p.p }

// Attach implements Policy.
func (p *Pipeline) Attach(v dataplane.View) error {
	p.v = v
	p.dep = v.Deployment()
	plan := map[string]string{}
	for _, a := range p.dep.Apps {
		for k, s := range a.Params {
			if _, ok := plan[k]; !ok {
				plan[k] = s
			}
		}
	}
	par, err := p.resolve(plan)
	if err != nil {
		return err
	}
	if _, ok := plan["sync_s"]; ok {
		if _, cfgSet := p.cfg.Params["sync_s"]; !cfgSet && par["sync_s"] != pardDefaults["sync_s"] {
			// The tick period is fixed when the engine is created (before Attach sees the
			// plan), so a plan cannot change it; say so rather than run a wrong cadence.
			return fmt.Errorf("policy %s: sync_s must be set with the policy configuration, not in the plan", p.variant.name)
		}
	}
	p.p = par
	p.lambda = par["lambda"]
	p.window = dataplane.Time(par["window_s"] * float64(dataplane.Second))
	p.sync = dataplane.Time(par["sync_s"] * float64(dataplane.Second))
	p.samples = int(par["samples"])
	p.purge = par["purge"] != 0
	p.autoscale = par["autoscale"] != 0
	p.coldStart = dataplane.Time(par["cold_start_s"] * float64(dataplane.Second))
	p.scaleWin = max(1, int(math.Round(par["scale_window_s"]/par["sync_s"])))
	p.scaleDown = max(0, int(math.Round(par["scale_down_s"]/par["sync_s"])))
	p.headroom = par["headroom"]
	p.scaleByMod = par["scale_by_module"] != 0
	p.ocAlpha = par["oc_alpha"]
	p.ocT = dataplane.Time(par["oc_t_ms"] * float64(dataplane.Millisecond))
	p.nexusSplit = par["split"] != 0
	p.cumulative = par["cumulative"] != 0
	p.fixedEps = par["eps"]
	if p.variant.instant {
		p.fixedEps = 0
	}
	p.smoothN = max(1, int(math.Round(par["smooth_window_s"]/par["sync_s"])))
	p.epsN = max(1, int(math.Round(par["eps_window_s"]/par["sync_s"])))
	p.muN = min(p.epsN, max(1, int(math.Round(par["mu_window_s"]/par["sync_s"]))))
	p.hopInLsub = par["hop_in_lsub"] != 0
	p.cancel = par["sibling_cancel"] != 0
	p.doomed = map[dataplane.ReqID]pardDrop{}
	seed := uint64(par["seed"])
	p.rng = rand.New(rand.NewPCG(seed, 0x5a4d_7061_7264_0001))
	p.deferred = map[dataplane.ReqID]pardDrop{}
	p.join = map[joinKey]int32{}
	return p.build(int(par["ring"]))
}
