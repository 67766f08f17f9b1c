package pard

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/params"
)

// Options are the pipeline policies' parameters (PARD §4.2–§4.3, §5.3; windows the paper
// leaves open are ours). The json tags are the keys a --param flag (dataplane.Config.Params)
// or a plan's application params set, decoded by params.Decode; DefaultOptions holds every
// default. Every key is a field, so a typo is an error instead of a silent default.
type Options struct {
	Lambda        float64 `json:"lambda"`          // batch-wait quantile λ (0.1)
	WindowS       float64 `json:"window_s"`        // queueing-delay window, linear weights (5 s)
	Samples       int     `json:"samples"`         // M, sums drawn per tick for F⁻¹(λ) (10000)
	Ring          int     `json:"ring"`            // normalized waits kept per module (10000)
	Seed          uint64  `json:"seed"`            // sampler seed (1)
	SyncS         float64 `json:"sync_s"`          // state-planner period, rate bucket (1 s)
	SmoothWindowS float64 `json:"smooth_window_s"` // T_s: moving mean of T_in (5 s)
	EpsWindowS    float64 `json:"eps_window_s"`    // ε: buckets summed (30 s)
	Eps           float64 `json:"eps"`             // fixed ε (≥ 0) instead of the measured one (-1: measured)
	Purge         bool    `json:"purge"`           // drop hopeless requests from the min end on every fill (true)
	Autoscale     bool    `json:"autoscale"`       // rate-based worker scaling (false)
	ColdStartS    float64 `json:"cold_start_s"`    // delay before a new worker serves (15 s)
	ScaleWindowS  float64 `json:"scale_window_s"`  // rate average the scaler provisions for (5 s)
	ScaleDownS    float64 `json:"scale_down_s"`    // the scaler keeps capacity for the max rate over this long (30 s)
	Headroom      float64 `json:"headroom"`        // provision rate × headroom (1)
	ScaleByModule bool    `json:"scale_by_module"` // scale each module on its own input rate, else on the app's (true)
	OCAlpha       float64 `json:"oc_alpha"`        // pard-oc: share of input shed while throttled (0.4)
	OCTMs         float64 `json:"oc_t_ms"`         // pard-oc: queueing-delay threshold T (25 ms)
	Split         bool    `json:"split"`           // nexus: per-stage deadlines (false)
	Cumulative    bool    `json:"cumulative"`      // clipper++ readings: the cumulative deadline Σ_{i≤k} SLO_i from t_s (the clipper++ default; false keeps the variant's own form)
	HopInLsub     bool    `json:"hop_in_lsub"`     // add downstream edges' planned hops to L_sub, not in the paper (true)
	MuWindowS     float64 `json:"mu_window_s"`     // μ from the mean T_in over this long, window not in the paper (2 s)
	SiblingCancel bool    `json:"sibling_cancel"`  // DAG: a drop on one branch cancels its siblings' work; paper: none (false)
	QDropped      bool    `json:"q_dropped"`       // q_i also samples the queueing delay of requests dropped at t_b (spec §8.6's alternative; false)
}

// DefaultOptions returns the defaults of every parameter (see Options).
func DefaultOptions() Options {
	return Options{Lambda: 0.1, WindowS: 5, Samples: 10000, Ring: 10000, Seed: 1, SyncS: 1,
		SmoothWindowS: 5, EpsWindowS: 30, Eps: -1, Purge: true, ColdStartS: 15, ScaleWindowS: 5,
		ScaleDownS: 30, Headroom: 1, ScaleByModule: true, OCAlpha: 0.4, OCTMs: 25, HopInLsub: true,
		MuWindowS: 2}
}

// PARDParamNames lists the parameter names the pipeline policies accept.
func PARDParamNames() []string { return params.Names[Options]() }

// NewPipeline builds the pipeline policy named name (one of PipelinePolicies) with cfg's
// parameters.
func NewPipeline(name string, cfg dataplane.Config) (*Pipeline, error) {
	for _, v := range pardVariants {
		if v.name == name {
			p := &Pipeline{variant: v, cfg: cfg}
			o, err := p.resolve(nil)
			if err != nil {
				return nil, err
			}
			p.cfgOpts = o
			return p, nil
		}
	}
	return nil, fmt.Errorf("unknown pipeline policy %q", name)
}

// resolve merges defaults, plan parameters and Config parameters (Config wins) and checks
// the result.
func (p *Pipeline) resolve(plan map[string]string) (Options, error) {
	o := DefaultOptions()
	if err := params.Decode(p.variant.name, &o, plan, true); err != nil {
		return o, err
	}
	if err := params.Decode(p.variant.name, &o, p.cfg.Params, false); err != nil {
		return o, err
	}
	return o, o.check(p.variant.name)
}

// check enforces every parameter's range.
func (o *Options) check(policy string) error {
	for _, c := range []struct {
		key  string
		val  float64
		ok   bool
		rule string
	}{
		{"lambda", o.Lambda, o.Lambda >= 0 && o.Lambda <= 1, "must be in [0, 1]"},
		{"window_s", o.WindowS, o.WindowS > 0 && o.WindowS <= 600, "must be in (0, 600]"},
		{"samples", float64(o.Samples), o.Samples >= 1 && o.Samples <= 1e6, "must be in [1, 1e6]"},
		{"ring", float64(o.Ring), o.Ring >= 1 && o.Ring <= 1e6, "must be in [1, 1e6]"},
		{"sync_s", o.SyncS, o.SyncS > 0 && o.SyncS <= 60, "must be in (0, 60]"},
		{"smooth_window_s", o.SmoothWindowS, o.SmoothWindowS >= o.SyncS && o.SmoothWindowS <= 600, "must be in [sync_s, 600]"},
		{"eps_window_s", o.EpsWindowS, o.EpsWindowS >= o.SyncS && o.EpsWindowS <= 3600, "must be in [sync_s, 3600]"},
		{"eps", o.Eps, o.Eps < 0 || o.Eps <= 1, "must be < 0 (measured) or in [0, 1]"},
		{"cold_start_s", o.ColdStartS, o.ColdStartS >= 0 && o.ColdStartS <= 3600, "must be in [0, 3600]"},
		{"scale_window_s", o.ScaleWindowS, o.ScaleWindowS >= 1 && o.ScaleWindowS <= 600, "must be in [1, 600]"},
		{"scale_down_s", o.ScaleDownS, o.ScaleDownS >= 0 && o.ScaleDownS <= 3600, "must be in [0, 3600]"},
		{"headroom", o.Headroom, o.Headroom > 0 && o.Headroom <= 100, "must be in (0, 100]"},
		{"oc_alpha", o.OCAlpha, o.OCAlpha >= 0 && o.OCAlpha < 1, "must be in [0, 1)"},
		{"oc_t_ms", o.OCTMs, o.OCTMs > 0, "must be > 0"},
		{"mu_window_s", o.MuWindowS, o.MuWindowS >= o.SyncS && o.MuWindowS <= o.EpsWindowS, "must be in [sync_s, eps_window_s]"},
	} {
		if !c.ok {
			return fmt.Errorf("policy %s: parameter %s: %g: %s", policy, c.key, c.val, c.rule)
		}
	}
	return nil
}

// TickEvery implements Ticker: the state planner's sync period (from the policy
// configuration: the engine arms the tick before Attach sees the plan).
func (p *Pipeline) TickEvery() dataplane.Time {
	return dataplane.Time(p.cfgOpts.SyncS * float64(dataplane.Second))
}

// Options returns the parameters in effect (after Attach: defaults, plan, config).
func (p *Pipeline) Options() Options { return p.opts }

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
	o, err := p.resolve(plan)
	if err != nil {
		return err
	}
	if _, ok := plan["sync_s"]; ok {
		if _, cfgSet := p.cfg.Params["sync_s"]; !cfgSet && o.SyncS != DefaultOptions().SyncS {
			// The tick period is fixed when the engine is created (before Attach sees the
			// plan), so a plan cannot change it; say so rather than run a wrong cadence.
			return fmt.Errorf("policy %s: sync_s must be set with the policy configuration, not in the plan", p.variant.name)
		}
	}
	p.opts = o
	p.lambda = o.Lambda
	p.window = dataplane.Time(o.WindowS * float64(dataplane.Second))
	p.sync = dataplane.Time(o.SyncS * float64(dataplane.Second))
	p.samples = o.Samples
	p.purge = o.Purge
	p.autoscale = o.Autoscale
	p.coldStart = dataplane.Time(o.ColdStartS * float64(dataplane.Second))
	p.scaleWin = max(1, int(math.Round(o.ScaleWindowS/o.SyncS)))
	p.scaleDown = max(0, int(math.Round(o.ScaleDownS/o.SyncS)))
	p.headroom = o.Headroom
	p.scaleByMod = o.ScaleByModule
	p.ocAlpha = o.OCAlpha
	p.ocT = dataplane.Time(o.OCTMs * float64(dataplane.Millisecond))
	p.nexusSplit = o.Split
	p.cumulative = o.Cumulative
	p.fixedEps = o.Eps
	if p.variant.instant {
		p.fixedEps = 0
	}
	p.smoothN = max(1, int(math.Round(o.SmoothWindowS/o.SyncS)))
	p.epsN = max(1, int(math.Round(o.EpsWindowS/o.SyncS)))
	p.muN = min(p.epsN, max(1, int(math.Round(o.MuWindowS/o.SyncS))))
	p.hopInLsub = o.HopInLsub
	p.cancel = o.SiblingCancel
	p.qDropped = o.QDropped
	p.doomed = map[dataplane.ReqID]pardDrop{}
	p.rng = rand.New(rand.NewPCG(o.Seed, 0x5a4d_7061_7264_0001))
	p.deferred = map[dataplane.ReqID]pardDrop{}
	p.join = map[joinKey]int32{}
	return p.build(o.Ring)
}
