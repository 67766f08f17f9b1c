package pard

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/plan-dev/plan/dataplane"
)

// PARD (Zhao et al., EuroSys '26) and the baselines it is compared with, as one pipeline
// executor with pluggable queue order and drop rule: policies differ only in queue order and
// drop test, so batching, scaling and dispatch stay identical (isolation as in PARD §5.3).
// Every module re-batches: each worker holds a double-ended priority queue, forms the next
// batch while the current one runs, and launches it the moment the GPU is free
// (work-conserving). The drop decision is taken at t_b, when the broker takes a request from
// the queue to put it into the forming batch.
//
// The state planner runs on the engine's 1 s tick and publishes a snapshot (windowed queueing
// delay, batch-wait quantile, load factor and priority mode, budgets); workers use the
// snapshot until the next tick, so the simulator sees the same staleness a distributed
// deployment would (1 s sync, PARD §5.4); reading live downstream state would flatter PARD.
// Only t_e and d_k are live.

// pardOrder is the queue order of a variant.
type pardOrder uint8

const (
	orderFIFO     pardOrder = iota // by arrival at the module
	orderLBF                       // low budget first: pop the earliest deadline
	orderHBF                       // high budget first: pop the latest deadline
	orderAdaptive                  // HBF when the module is overloaded, LBF otherwise
)

// pardRule is the drop test of a variant.
type pardRule uint8

const (
	ruleNone    pardRule = iota // never drop (late completions count as drops)
	ruleNexus                   // sliding-window rule on L_pre + L_cur
	ruleClipper                 // fixed local budget on the queueing delay before inference
	ruleEq3                     // PARD's end-to-end estimate
	ruleSplit                   // fixed local budget on Q+W+D
	ruleWCL                     // budgets proportional to runtime worst-case latency
	ruleOC                      // DAGOR-style overload control plus an expiry check
)

// lsubMode says how a variant estimates the downstream latency.
type lsubMode uint8

const (
	lsubFull lsubMode = iota // Σq + Σd + hops + w (Eq. 3)
	lsubBack                 // 0: backward-looking only
	lsubSF                   // Σd only (DREAM-like)
)

// wMode picks the batch-wait term.
type wMode uint8

const (
	wQuantile wMode = iota // F⁻¹(λ) of the sampled downstream wait sum
	wLower                 // 0
	wUpper                 // Σd downstream
)

type pardVariant struct {
	name, doc string
	order     pardOrder
	rule      pardRule
	lsub      lsubMode
	w         wMode
	instant   bool
}

// pardVariants are the registered pipeline policies (PARD §5.1 baselines, Table 1 ablations).
var pardVariants = []pardVariant{
	{name: "none", doc: "pipeline baseline (Naive): FIFO, never drops; late completions count as drops", order: orderFIFO, rule: ruleNone},
	{name: "nexus", doc: "pipeline baseline Nexus: FIFO, sliding-window drop on L_pre+L_cur against the end-to-end deadline (param split=true: per-stage deadlines)", order: orderFIFO, rule: ruleNexus},
	{name: "clipper++", doc: "pipeline baseline Clipper++: FIFO, fixed SLO split ∝ d_k, drop when the local queueing delay exceeds the stage budget (param cumulative=true: cumulative budgets)", order: orderFIFO, rule: ruleClipper},
	{name: "pard", doc: "PARD: Eq. 3 end-to-end estimate at t_b (λ=0.1 batch-wait quantile), adaptive HBF/LBF priority with ε hysteresis", order: orderAdaptive, rule: ruleEq3},
	{name: "pard-back", doc: "PARD ablation: L_sub = 0 (backward-looking, like Nexus/Scrooge/Clockwork)", order: orderAdaptive, rule: ruleEq3, lsub: lsubBack},
	{name: "pard-sf", doc: "PARD ablation: L_sub = Σd only (like DREAM)", order: orderAdaptive, rule: ruleEq3, lsub: lsubSF},
	{name: "pard-oc", doc: "PARD ablation: DAGOR-style overload control (admit (1-α) of the input upstream of a module whose queueing delay exceeds T) plus expiry drops", order: orderAdaptive, rule: ruleOC},
	{name: "pard-split", doc: "PARD ablation: fixed per-module budgets B_k = SLO·d_k/Σd, local test t_e+d_k-t_r > B_k", order: orderAdaptive, rule: ruleSplit},
	{name: "pard-wcl", doc: "PARD ablation: budgets ∝ runtime worst-case latency (p99 of Q+W+D over 5 s), reallocated every second", order: orderAdaptive, rule: ruleWCL},
	{name: "pard-lower", doc: "PARD ablation: batch-wait term w_k = 0", order: orderAdaptive, rule: ruleEq3, w: wLower},
	{name: "pard-upper", doc: "PARD ablation: batch-wait term w_k = Σd downstream", order: orderAdaptive, rule: ruleEq3, w: wUpper},
	{name: "pard-fcfs", doc: "PARD ablation: FIFO order with the Eq. 3 drop test", order: orderFIFO, rule: ruleEq3},
	{name: "pard-hbf", doc: "PARD ablation: always high budget first", order: orderHBF, rule: ruleEq3},
	{name: "pard-lbf", doc: "PARD ablation: always low budget first (SHEPHERD-like closest deadline first)", order: orderLBF, rule: ruleEq3},
	{name: "pard-instant", doc: "PARD ablation: HBF/LBF switching without hysteresis (ε = 0)", order: orderAdaptive, rule: ruleEq3, instant: true},
}

// PipelinePolicies lists the names of the pipeline policies (PARD, its ablations and the
// baselines): the baselines and PARD first, then the ablations in Table 1's order.
func PipelinePolicies() []string {
	out := make([]string, len(pardVariants))
	for i, v := range pardVariants {
		out[i] = v.name
	}
	return out
}

// Drop reasons of the pipeline policies.
const (
	// DropEstimate: PARD's Eq. 3 end-to-end estimate exceeds the SLO.
	DropEstimate dataplane.DropReason = "estimate"
	// DropPurge: the request at the min end of the queue can no longer make it even if it
	// were served now (ours: under HBF such requests could sit at the min end indefinitely).
	DropPurge dataplane.DropReason = "purge"
	// DropWindow: Nexus's sliding-window rule.
	DropWindow dataplane.DropReason = "window"
	// DropBudget: a per-module latency budget was exceeded (Clipper++, split, WCL).
	DropBudget dataplane.DropReason = "budget"
	// DropOverload: DAGOR-style admission control shed the request on arrival.
	DropOverload dataplane.DropReason = "overload"
	// DropExpired: the request is already past its end-to-end deadline.
	DropExpired dataplane.DropReason = "expired"
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

// Pipeline is the pipeline executor: one instance runs one variant (pard, nexus, ...).
type Pipeline struct {
	variant pardVariant
	cfg     dataplane.Config
	p       map[string]float64

	v   dataplane.View
	dep *dataplane.Deployment

	lambda     float64
	window     dataplane.Time
	sync       dataplane.Time
	samples    int
	purge      bool
	autoscale  bool
	coldStart  dataplane.Time
	scaleWin   int
	scaleDown  int
	headroom   float64
	scaleByMod bool
	ocAlpha    float64
	ocT        dataplane.Time
	nexusSplit bool
	cumulative bool
	fixedEps   float64
	smoothN    int
	epsN       int
	muN        int
	hopInLsub  bool
	cancel     bool
	doomed     map[dataplane.ReqID]pardDrop
	rng        *rand.Rand
	mods       []pardModule // indexed by StageID
	workers    []pardWorker // indexed by WorkerID (only pipeline workers are used)
	apps       []pardApp
	flags      idTable[uint8]      // per request: gone (a drop was decided); Forget trims it
	merges     []dataplane.StageID // modules where DAG branches join (join map keys)
	deferred   map[dataplane.ReqID]pardDrop
	join       map[joinKey]int32
	touched    []dataplane.WorkerID
	buf        []dataplane.ReqID
	path       [1]dataplane.PathHop
	tickCount  int64
	// checkPick, when set (tests), sees every pick before the round-robin pointer moves.
	checkPick func(now dataplane.Time, m *pardModule, got dataplane.WorkerID)
}

const (
	flagGone uint8 = 1 << iota
)

type joinKey struct {
	r dataplane.ReqID
	s dataplane.StageID
}

type pardDrop struct {
	stage  dataplane.StageID
	reason dataplane.DropReason
	est    dataplane.Time
}

type pardApp struct {
	id      dataplane.AppID
	slo     dataplane.Time
	entry   dataplane.StageID
	mods    []dataplane.StageID // topological order
	ingress []int64             // per-second arrivals (ring, scale_down_s + scale_window_s long)
	inCur   int64
	rate5   []float64 // ring of the scaler's windowed rate, one per tick
	// sampler scratch: per module a draw, per (module, path) the sums
	draw []float64
}

type qBucket struct {
	n   int64 // bucket number (time / 100 ms); -1 = empty
	sum float64
	cnt float64
}

type pardPath struct {
	mods  []dataplane.StageID // downstream modules in order (excluding the deciding module)
	hops  dataplane.Time      // planned transfer delays along the path, the deciding module's edge included
	sumD  dataplane.Time      // Σ d_i(b_i)
	samps []float64           // sampler scratch
}

type pardModule struct {
	used    bool
	stage   dataplane.StageID
	app     dataplane.AppID
	slo     dataplane.Time
	batch   int
	d       dataplane.Time
	workers []dataplane.WorkerID
	preds   int
	ances   []dataplane.StageID // every upstream module (pard-oc throttles them)
	paths   []pardPath
	// merge is the first merge module downstream when the module lies on a branch between
	// a fan-out and its merge (NoStage otherwise): a drop there must wait for the siblings.
	merge dataplane.StageID
	// sumD is the largest Σd over source→sink paths through the module (budget split);
	// prefD the largest Σd over source→module prefixes (cumulative budgets).
	sumD, prefD dataplane.Time

	qb       []qBucket
	u        []float32
	uN, uPos int
	inCur    int64
	tin, ts  []float64 // rings of T_in and T_s per bucket
	rpos, rn int
	hbf      bool
	mu, eps  float64
	q        dataplane.Time // published windowed queueing delay
	q1       dataplane.Time // last second's mean queueing delay (pard-oc)
	lsub     dataplane.Time // published L_sub
	w        dataplane.Time // published batch-wait quantile (largest path)
	budget   dataplane.Time // split / WCL budget
	wclCur   []dataplane.Time
	wclHist  [][]dataplane.Time
	wcl      dataplane.Time
	throttle bool
	credit   float64
	rr       int
	// jsq indexes the workers' join-shortest-queue loads for pick; its leaves count a
	// worker as serving when activeAt ≤ actNow, and nextAct is the earliest later activeAt.
	jsq             jsqTree
	actNow, nextAct dataplane.Time
}

type pardWorker struct {
	mod      dataplane.StageID
	q        DEPQ
	forming  []dataplane.ReqID
	busy     bool
	runStart dataplane.Time
	runNom   dataplane.Time
	activeAt dataplane.Time // when it serves new requests (Never = not provisioned)
	cand     []pardCand
	pos      int // index in its module's workers (the jsq leaf)
	// running lists the requests of the batch the worker runs (valid while busy): a worker
	// failure loses that batch and no EvBatchDone will come for it.
	running []dataplane.ReqID
	// down mirrors View.WorkerDown: the worker failed (EvWorkerDown) and is not back.
	down bool
}

type pardCand struct {
	id  dataplane.ReqID
	est dataplane.Time
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

// Name implements Policy.
func (p *Pipeline) Name() string { return p.variant.name }

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

// build derives the per-module structure (paths, budgets) from the deployment graph.
func (p *Pipeline) build(ring int) error {
	d := p.dep
	p.mods = make([]pardModule, len(d.Stages))
	p.workers = make([]pardWorker, len(d.Topo.Workers))
	preds := make([][]dataplane.StageID, len(d.Stages))
	for i := range d.Stages {
		for _, n := range d.Stages[i].Next {
			preds[n] = append(preds[n], dataplane.StageID(i))
		}
	}
	nb := int(math.Ceil(float64(p.window)/float64(100*dataplane.Millisecond))) + 1
	for ai := range d.Apps {
		a := &d.Apps[ai]
		if len(a.Entry) != 1 {
			return fmt.Errorf("application %s: pipeline policies need exactly one entry module, found %d", a.Name, len(a.Entry))
		}
		if len(a.Pipelines) > 1 {
			return fmt.Errorf("application %s: pipeline policies serve one module graph per application, found %d pipelines (a PPipe plan?)", a.Name, len(a.Pipelines))
		}
		// Topological order of the modules reachable from the entry (Kahn).
		reach := map[dataplane.StageID]bool{}
		var stack []dataplane.StageID
		stack = append(stack, a.Entry[0])
		for len(stack) > 0 {
			s := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if reach[s] {
				continue
			}
			reach[s] = true
			stack = append(stack, d.Stages[s].Next...)
		}
		indeg := map[dataplane.StageID]int{}
		for s := range reach {
			for _, pr := range preds[s] {
				if !reach[pr] {
					return fmt.Errorf("application %s: module %s has a predecessor %s the entry does not reach", a.Name, d.Stages[s].Name, d.Stages[pr].Name)
				}
			}
			indeg[s] = len(preds[s])
		}
		var order []dataplane.StageID
		ready := []dataplane.StageID{a.Entry[0]}
		if indeg[a.Entry[0]] != 0 {
			return fmt.Errorf("application %s: the entry module %s has predecessors (a cycle?)", a.Name, d.Stages[a.Entry[0]].Name)
		}
		for len(ready) > 0 {
			s := ready[0]
			ready = ready[1:]
			order = append(order, s)
			for _, n := range d.Stages[s].Next {
				indeg[n]--
				if indeg[n] == 0 {
					ready = append(ready, n)
				}
			}
		}
		if len(order) != len(reach) {
			return fmt.Errorf("application %s: the module graph has a cycle", a.Name)
		}
		sinks := 0
		for _, s := range order {
			if len(d.Stages[s].Next) == 0 {
				sinks++
			}
		}
		if sinks != 1 {
			return fmt.Errorf("application %s: pipeline policies need exactly one sink module (branches must merge), found %d", a.Name, sinks)
		}
		pa := pardApp{id: dataplane.AppID(ai), slo: a.SLO, entry: a.Entry[0], mods: order,
			ingress: make([]int64, p.scaleDown+p.scaleWin+1), rate5: make([]float64, p.scaleDown+1),
			draw: make([]float64, len(d.Stages))}
		p.apps = append(p.apps, pa)
		for _, s := range order {
			st := &d.Stages[s]
			m := &p.mods[s]
			m.used = true
			m.stage = s
			m.app = dataplane.AppID(ai)
			m.slo = a.SLO
			m.batch = st.Batch
			m.d = st.Lat(st.Batch)
			m.workers = st.Pool
			m.preds = len(preds[s])
			m.qb = make([]qBucket, nb)
			for i := range m.qb {
				m.qb[i].n = -1
			}
			m.u = make([]float32, ring)
			m.tin = make([]float64, p.epsN)
			m.ts = make([]float64, p.epsN)
			m.wclHist = make([][]dataplane.Time, max(1, int(math.Ceil(float64(p.window)/float64(p.sync)))))
			if len(st.Pool) == 0 {
				return fmt.Errorf("application %s: module %s has no workers", a.Name, st.Name)
			}
			active := st.Active
			if active <= 0 || active > len(st.Pool) {
				active = len(st.Pool)
			}
			for i, w := range st.Pool {
				pw := &p.workers[w]
				pw.mod = s
				pw.pos = i
				pw.activeAt = dataplane.Never
				if i < active {
					pw.activeAt = 0
				}
			}
			p.reindex(m, 0)
		}
		// Downstream paths of every module and Σd over whole paths.
		for _, s := range order {
			m := &p.mods[s]
			var walk func(cur dataplane.StageID, acc []dataplane.StageID, hops dataplane.Time)
			walk = func(cur dataplane.StageID, acc []dataplane.StageID, hops dataplane.Time) {
				st := &d.Stages[cur]
				if len(st.Next) == 0 {
					pp := pardPath{mods: append([]dataplane.StageID(nil), acc...), hops: hops, samps: make([]float64, p.samples)}
					for _, x := range pp.mods {
						pp.sumD += p.mods[x].d
					}
					m.paths = append(m.paths, pp)
					return
				}
				for _, n := range st.Next {
					walk(n, append(acc, n), hops+st.Xfer(st.Batch))
				}
			}
			walk(s, nil, 0)
		}
		for _, s := range order {
			m := &p.mods[s]
			var down dataplane.Time
			for _, pp := range m.paths {
				down = max(down, pp.sumD)
			}
			// Longest prefix Σd ending at s (topological DP over predecessors).
			var pre dataplane.Time
			for _, pr := range preds[s] {
				pre = max(pre, p.mods[pr].prefD)
			}
			m.prefD = pre + m.d
			m.merge = dataplane.NoStage
			for cur := s; len(d.Stages[cur].Next) == 1; {
				n := d.Stages[cur].Next[0]
				if len(preds[n]) > 1 {
					m.merge = n
					break
				}
				cur = n
			}
			m.sumD = m.prefD + down
			// Ancestors for pard-oc.
			seen := map[dataplane.StageID]bool{}
			var up func(x dataplane.StageID)
			up = func(x dataplane.StageID) {
				for _, pr := range preds[x] {
					if !seen[pr] {
						seen[pr] = true
						m.ances = append(m.ances, pr)
						up(pr)
					}
				}
			}
			up(s)
			sort.Slice(m.ances, func(i, j int) bool { return m.ances[i] < m.ances[j] })
			if m.preds > 1 {
				p.merges = append(p.merges, s)
			}
			m.budget = dataplane.Time(float64(a.SLO) * float64(m.d) / float64(max(m.sumD, 1)))
		}
	}
	return nil
}

// gone: a drop was decided for the request, it reached its outcome, or the engine retired
// it (Forget: only finished requests are retired).
func (p *Pipeline) gone(id dataplane.ReqID) bool {
	return id < p.flags.base || p.flags.at(id)&flagGone != 0
}

// drop decides a drop. A request still inside a batch of a sibling DAG branch cannot be
// dropped by the engine yet: the decision (stage, reason, estimate) is kept and issued when
// the sibling hands the request back.
func (p *Pipeline) drop(out *dataplane.Decisions, id dataplane.ReqID, stage dataplane.StageID, reason dataplane.DropReason, est dataplane.Time) {
	if p.gone(id) {
		return
	}
	if mg := p.mods[stage].merge; mg != dataplane.NoStage && !p.cancel {
		// Without sibling cancellation the other branches keep working on the request
		// (their GPU time then counts as invalid); the drop is issued at the merge once
		// every branch is accounted for, the dropped one counting as arrived.
		if _, ok := p.doomed[id]; !ok {
			p.doomed[id] = pardDrop{stage, reason, est}
		}
		k := joinKey{id, mg}
		c := p.join[k] + 1
		if int(c) < p.mods[mg].preds {
			p.join[k] = c
			return
		}
		delete(p.join, k)
		p.dropDoomed(out, id)
		return
	}
	p.markGone(id)
	if p.v.Req(id).InFlight() {
		p.deferred[id] = pardDrop{stage, reason, est}
		return
	}
	out.Drop(id, stage, reason, est)
}

// dropDoomed issues the first drop decided on any branch of a request whose branches are
// all done.
func (p *Pipeline) dropDoomed(out *dataplane.Decisions, id dataplane.ReqID) {
	dd := p.doomed[id]
	delete(p.doomed, id)
	p.markGone(id)
	if p.v.Req(id).InFlight() {
		p.deferred[id] = dd
		return
	}
	out.Drop(id, dd.stage, dd.reason, dd.est)
}

// flushDeferred issues a kept drop once no batch holds the request any more.
func (p *Pipeline) flushDeferred(out *dataplane.Decisions, id dataplane.ReqID) {
	if dd, ok := p.deferred[id]; ok && !p.v.Req(id).InFlight() && p.v.Req(id).Outcome == dataplane.Pending {
		delete(p.deferred, id)
		out.Drop(id, dd.stage, dd.reason, dd.est)
	}
}

// Handle implements Policy.
func (p *Pipeline) Handle(now dataplane.Time, ev *dataplane.Event, out *dataplane.Decisions) {
	switch ev.Kind {
	case dataplane.EvArrival:
		r := p.v.Req(ev.Req)
		a := &p.apps[r.App]
		a.inCur++
		p.touched = p.touched[:0]
		p.arriveAt(now, a.entry, ev.Req, out)
		p.fillTouched(now, out)
	case dataplane.EvStageArrival:
		p.touched = p.touched[:0]
		for _, id := range p.v.Arrived(ev) {
			if p.withdrawn(out, id, ev.Stage) {
				continue
			}
			if p.gone(id) {
				p.flushDeferred(out, id)
				continue
			}
			p.arriveAt(now, ev.Stage, id, out)
		}
		p.fillTouched(now, out)
	case dataplane.EvBatchDone:
		if int(ev.Worker) < len(p.workers) {
			w := &p.workers[ev.Worker]
			if p.mods[w.mod].used && w.busy {
				w.busy = false
				p.reload(ev.Worker)
				p.fill(now, ev.Worker, out)
			}
		}
	case dataplane.EvTick:
		p.tick(now)
	case dataplane.EvWorkerDown:
		p.workerDown(now, ev.Worker, out)
	case dataplane.EvWorkerUp:
		p.workerUp(ev.Worker)
	case dataplane.EvCancel:
		p.cancelReq(now, ev.Req, out)
	}
}

// OnWorkerFailure implements dataplane.FailureAware with FailDrop: the engine drops the
// requests of the batch the failed worker ran, and the pipeline keeps serving with the
// module's other workers. PARD names machine failures among the unforeseen events that make
// requests late (§1, §2) but describes no failover; it adjusts capacity by resource scaling
// (§5.1), so here the autoscaler, when on, provisions a replacement as for any capacity
// shortfall, and the lost batch's requests are not re-run (our choice).
func (p *Pipeline) OnWorkerFailure() dataplane.FailureMode { return dataplane.FailDrop }

// owns reports whether w is a worker of one of the pipeline's modules.
func (p *Pipeline) owns(w dataplane.WorkerID) bool {
	if int(w) < 0 || int(w) >= len(p.workers) {
		return false
	}
	m := &p.mods[p.workers[w].mod]
	return m.used && p.workers[w].pos < len(m.workers) && m.workers[p.workers[w].pos] == w
}

// workerDown forgets the batch the failed worker ran (the engine lost it and dropped its
// requests, so no completion will free the worker) and hands the requests it queued or was
// batching to the module's live workers; with none left they are dropped as worker-failed,
// as every later arrival at the module is until a worker is back (waiting could last for
// ever if the failure is permanent).
func (p *Pipeline) workerDown(now dataplane.Time, w dataplane.WorkerID, out *dataplane.Decisions) {
	if !p.owns(w) {
		return
	}
	pw := &p.workers[w]
	if pw.down {
		return
	}
	pw.down = true
	m := &p.mods[pw.mod]
	if pw.busy {
		pw.busy = false
		for _, id := range pw.running {
			if p.gone(id) {
				continue
			}
			if p.v.Req(id).Outcome == dataplane.Pending {
				// A DAG branch of the request is still held elsewhere, so the engine kept
				// it: this branch is lost, which counts as a drop on it (the merge then
				// drops the request once the siblings are accounted for).
				p.drop(out, id, m.stage, dataplane.DropWorkerFailed, 0)
				continue
			}
			// The engine dropped it; copies queued on sibling branches must not run.
			p.markGone(id)
		}
	}
	pw.running = pw.running[:0]
	p.reload(w)
	p.touched = p.touched[:0]
	for _, id := range pw.forming {
		// The forming batch's module arrival times are not kept: they count from now.
		key := p.v.Req(id).Deadline
		if p.variant.order == orderFIFO {
			key = now
		}
		p.rehome(now, m, id, key, now, out)
	}
	pw.forming = pw.forming[:0]
	for pw.q.Len() > 0 {
		key, id, tr := pw.q.PopMin()
		p.rehome(now, m, id, key, tr, out)
	}
	p.reload(w)
	p.fillTouched(now, out)
}

// rehome queues request id (key, module arrival tr) of module m at the worker pick chooses,
// or drops it as worker-failed when the module has no live worker.
func (p *Pipeline) rehome(now dataplane.Time, m *pardModule, id dataplane.ReqID, key, tr dataplane.Time, out *dataplane.Decisions) {
	if p.gone(id) {
		p.flushDeferred(out, id)
		return
	}
	t := p.pick(now, m)
	if t == dataplane.NoWorker {
		p.drop(out, id, m.stage, dataplane.DropWorkerFailed, 0)
		return
	}
	p.workers[t].q.Push(key, id, tr)
	p.reload(t)
	p.touch(t)
}

// workerUp takes worker w back: it is empty and serves again as it did before it failed.
func (p *Pipeline) workerUp(w dataplane.WorkerID) {
	if !p.owns(w) || !p.workers[w].down {
		return
	}
	p.workers[w].down = false
	p.reload(w)
}

// markGone records that request id reached its outcome (or will, by a decided drop).
func (p *Pipeline) markGone(id dataplane.ReqID) {
	p.flags.set(id, p.flags.at(id)|flagGone)
}

// touch adds w to the workers to fill after the current event.
func (p *Pipeline) touch(w dataplane.WorkerID) {
	for _, t := range p.touched {
		if t == w {
			return
		}
	}
	p.touched = append(p.touched, w)
}

// arriveAt queues request id at module s (joining DAG branches first).
func (p *Pipeline) arriveAt(now dataplane.Time, s dataplane.StageID, id dataplane.ReqID, out *dataplane.Decisions) {
	m := &p.mods[s]
	if m.preds > 1 {
		k := joinKey{id, s}
		c := p.join[k] + 1
		if int(c) < m.preds {
			p.join[k] = c
			return
		}
		delete(p.join, k)
		if _, ok := p.doomed[id]; ok {
			p.dropDoomed(out, id)
			return
		}
	}
	if sp := p.dep.Stages[s].SkipProb; sp > 0 && dataplane.SkipCoin(skipSeed, id, s) < sp {
		p.skip(now, s, id, out)
		return
	}
	m.inCur++
	if p.variant.rule == ruleOC && m.throttle {
		m.credit += 1 - p.ocAlpha
		if m.credit < 1 {
			p.drop(out, id, s, DropOverload, m.q1)
			return
		}
		m.credit--
	}
	w := p.pick(now, m)
	if w == dataplane.NoWorker {
		// Every worker of the module is down (or a spare): nothing would ever serve it.
		p.drop(out, id, s, dataplane.DropWorkerFailed, 0)
		return
	}
	pw := &p.workers[w]
	r := p.v.Req(id)
	key := r.Deadline
	if p.variant.order == orderFIFO {
		key = now
	}
	pw.q.Push(key, id, now)
	p.reload(w)
	p.touch(w)
}

// skip passes a request that does not visit conditional module s on, as if s had run: to
// each successor (joins count it), or, at a sink, to completion unless another branch still
// holds it (that branch then finishes it at its own sink, the engine's first-sink rule).
func (p *Pipeline) skip(now dataplane.Time, s dataplane.StageID, id dataplane.ReqID, out *dataplane.Decisions) {
	st := &p.dep.Stages[s]
	if len(st.Next) > 0 {
		for _, n := range st.Next {
			p.arriveAt(now, n, id, out)
		}
		return
	}
	r := p.v.Req(id)
	if r.InFlight() || r.Outcome != dataplane.Pending || p.gone(id) {
		return
	}
	p.markGone(id)
	out.Complete(id, s)
}

func (p *Pipeline) fillTouched(now dataplane.Time, out *dataplane.Decisions) {
	for i := 0; i < len(p.touched); i++ {
		p.fill(now, p.touched[i], out)
	}
}

// pick is the module's dispatcher: join-shortest-queue over the workers that serve now (queued
// + forming requests), ties broken round-robin (PARD §4.1 leaves the dispatcher open): the
// first worker with the least load in pool order from m.rr on, wrapping around. The module's
// jsq tree answers that in O(log n) instead of a scan of every worker (issue 15 item 4);
// pickLinear in the tests is the scan it must agree with.
func (p *Pipeline) pick(now dataplane.Time, m *pardModule) dataplane.WorkerID {
	if now >= m.nextAct {
		p.reindex(m, now)
	}
	n := len(m.workers)
	best := dataplane.NoWorker
	if lo := m.jsq.n[1]; lo != jsqIdle {
		i := m.jsq.first(1, 0, m.jsq.size, m.rr, lo)
		if i < 0 {
			i = m.jsq.first(1, 0, m.jsq.size, 0, lo)
		}
		best = m.workers[i]
	}
	if p.checkPick != nil {
		p.checkPick(now, m, best)
	}
	m.rr = (m.rr + 1) % n
	if best == dataplane.NoWorker {
		// Nothing serves (every worker is cold): queue at the first worker, which drains
		// when it starts; the estimate will drop what cannot wait.
		best = m.workers[0]
		if p.workers[best].down {
			best = p.coldLive(m)
		}
	}
	return best
}

// coldLive is the first provisioned worker of m that is not down (a cold one: pick found
// none serving), or NoWorker: then no worker of the module will serve without a recovery.
func (p *Pipeline) coldLive(m *pardModule) dataplane.WorkerID {
	for _, w := range m.workers {
		if pw := &p.workers[w]; !pw.down && pw.activeAt != dataplane.Never {
			return w
		}
	}
	return dataplane.NoWorker
}

// load is worker pw's join-shortest-queue load (Never-like jsqIdle while it does not
// serve at the module's actNow): twice its queued and forming requests, plus one while
// it runs a batch, so a running worker loses ties to an idle one with the same queue.
func (p *Pipeline) load(m *pardModule, pw *pardWorker) int {
	if pw.activeAt > m.actNow || pw.down {
		return jsqIdle
	}
	l := 2 * (pw.q.Len() + len(pw.forming))
	if pw.busy {
		l++
	}
	return l
}

// reload refreshes worker w's jsq leaf after its queue, forming batch or busy flag changed.
func (p *Pipeline) reload(w dataplane.WorkerID) {
	pw := &p.workers[w]
	m := &p.mods[pw.mod]
	if len(m.jsq.n) == 0 {
		return
	}
	m.jsq.set(pw.pos, p.load(m, pw))
}

// reindex rebuilds module m's jsq tree as of now (at attach, after the autoscaler moved
// activeAt, and when a cold worker's activeAt has passed).
func (p *Pipeline) reindex(m *pardModule, now dataplane.Time) {
	m.actNow = now
	m.nextAct = dataplane.Never
	t := &m.jsq
	if len(t.n) == 0 {
		t.size = 1
		for t.size < len(m.workers) {
			t.size *= 2
		}
		t.n = make([]int, 2*t.size)
	}
	for i := range t.n[t.size:] {
		t.n[t.size+i] = jsqIdle
	}
	for i, w := range m.workers {
		pw := &p.workers[w]
		t.n[t.size+i] = p.load(m, pw)
		if pw.activeAt > now && pw.activeAt < m.nextAct {
			m.nextAct = pw.activeAt
		}
	}
	for k := t.size - 1; k >= 1; k-- {
		t.n[k] = min(t.n[2*k], t.n[2*k+1])
	}
}

// jsqIdle is the load of a worker that does not serve: above every real load.
const jsqIdle = math.MaxInt

// jsqTree is a min segment tree over a module's workers in pool order (root 1, leaves
// [size, 2·size), padding jsqIdle).
type jsqTree struct {
	n    []int
	size int
}

func (t *jsqTree) set(pos, v int) {
	k := t.size + pos
	if t.n[k] == v {
		return
	}
	t.n[k] = v
	for k > 1 {
		k >>= 1
		m := min(t.n[2*k], t.n[2*k+1])
		if t.n[k] == m {
			return
		}
		t.n[k] = m
	}
}

// first returns the first leaf position ≥ from under node k (covering [lo, hi)) whose
// load is ≤ v, or -1.
func (t *jsqTree) first(k, lo, hi, from, v int) int {
	if hi <= from || t.n[k] > v {
		return -1
	}
	if k >= t.size {
		return lo
	}
	mid := (lo + hi) / 2
	if i := t.first(2*k, lo, mid, from, v); i >= 0 {
		return i
	}
	return t.first(2*k+1, mid, hi, from, v)
}

// expectedStart is t_e: the end of the running batch, or now when the GPU is idle.
func (pw *pardWorker) expectedStart(now dataplane.Time) dataplane.Time {
	if pw.busy {
		return max(pw.runStart+pw.runNom, now)
	}
	return now
}

// fill is the request broker (PARD §4.2, Eq. 3): take requests in priority order, drop or add
// them to the forming batch, and launch when the GPU is idle.
func (p *Pipeline) fill(now dataplane.Time, w dataplane.WorkerID, out *dataplane.Decisions) {
	pw := &p.workers[w]
	if pw.down {
		return // a dispatch to it would only drop the batch (its queue went to live workers)
	}
	m := &p.mods[pw.mod]
	te := pw.expectedStart(now)
	slo := m.slo
	pw.cand = pw.cand[:0]
	for len(pw.forming)+len(pw.cand) < m.batch && pw.q.Len() > 0 {
		if p.purge && p.variant.rule == ruleEq3 && p.variant.order != orderFIFO {
			// Ours: whatever the mode, a request that cannot make it even if served now
			// would be dropped whenever popped; drop it from the min end right away.
			for pw.q.Len() > 0 {
				_, id, _ := pw.q.Min()
				r := p.v.Req(id)
				est := (now - r.Arrival) + m.d + m.lsub
				if est <= slo {
					break
				}
				pw.q.PopMin()
				p.reload(w)
				p.drop(out, id, m.stage, DropPurge, est)
			}
			if pw.q.Len() == 0 {
				break
			}
		}
		var id dataplane.ReqID
		var tr dataplane.Time
		switch {
		case p.variant.order == orderHBF || p.variant.order == orderAdaptive && m.hbf:
			_, id, tr = pw.q.PopMax()
		default:
			_, id, tr = pw.q.PopMin()
		}
		p.reload(w)
		if p.gone(id) {
			p.flushDeferred(out, id)
			continue
		}
		if p.withdrawn(out, id, m.stage) {
			continue
		}
		r := p.v.Req(id)
		drop, reason, est := p.test(now, te, tr, r, m)
		if p.variant.rule == ruleNexus {
			if drop {
				for _, c := range pw.cand {
					p.drop(out, c.id, m.stage, DropWindow, c.est)
				}
				pw.cand = pw.cand[:0]
				p.drop(out, id, m.stage, reason, est)
				continue
			}
			pw.cand = append(pw.cand, pardCand{id, tr})
			continue
		}
		if drop {
			p.drop(out, id, m.stage, reason, est)
			continue
		}
		p.keep(now, te, tr, pw, m, id)
	}
	for _, c := range pw.cand {
		p.keep(now, te, c.est, pw, m, c.id)
	}
	pw.cand = pw.cand[:0]
	if !pw.busy && len(pw.forming) > 0 {
		p.launch(now, w, out)
	}
}

// keep adds a request to the forming batch and records the planner's samples.
func (p *Pipeline) keep(now, te, tr dataplane.Time, pw *pardWorker, m *pardModule, id dataplane.ReqID) {
	pw.forming = append(pw.forming, id)
	p.reload(m.workers[pw.pos])
	// Q = t_b − t_r from batched requests only (dropped ones would bias q up under HBF), in
	// 100 ms buckets.
	bn := int64(now / (100 * dataplane.Millisecond))
	qb := &m.qb[bn%int64(len(m.qb))]
	if qb.n != bn {
		*qb = qBucket{n: bn}
	}
	qb.sum += float64(now - tr)
	qb.cnt++
	// Normalized batch wait u = W/d(run size).
	var u float32
	if pw.busy && pw.runNom > 0 {
		u = float32(float64(te-now) / float64(pw.runNom))
	}
	m.u[m.uPos] = u
	m.uPos = (m.uPos + 1) % len(m.u)
	if m.uN < len(m.u) {
		m.uN++
	}
	if p.variant.rule == ruleWCL {
		m.wclCur = append(m.wclCur, te-tr+m.d)
	}
}

// test is the drop rule at t_b for request r (arrived at the module at tr).
func (p *Pipeline) test(now, te, tr dataplane.Time, r *dataplane.Request, m *pardModule) (bool, dataplane.DropReason, dataplane.Time) {
	switch p.variant.rule {
	case ruleNexus:
		if p.nexusSplit {
			l := te + m.d - tr
			return l > m.budget, DropWindow, l
		}
		l := te + m.d - r.Arrival
		return l > m.slo, DropWindow, l
	case ruleClipper:
		if p.cumulative {
			l := now - r.Arrival
			return l > dataplane.Time(float64(m.slo)*float64(m.prefD-m.d)/float64(max(m.sumD, 1))), DropBudget, l
		}
		l := now - tr
		return l > m.budget, DropBudget, l
	case ruleEq3:
		l := (te - r.Arrival) + m.d + m.lsub
		return l > m.slo, DropEstimate, l
	case ruleSplit, ruleWCL:
		l := te + m.d - tr
		return l > m.budget, DropBudget, l
	case ruleOC:
		l := now - r.Arrival
		return l > m.slo, DropExpired, l
	}
	return false, "", 0
}

// launch starts the forming batch on the idle worker and begins forming the next one.
func (p *Pipeline) launch(now dataplane.Time, w dataplane.WorkerID, out *dataplane.Decisions) {
	pw := &p.workers[w]
	m := &p.mods[pw.mod]
	p.buf = p.buf[:0]
	for _, id := range pw.forming {
		if p.gone(id) {
			p.flushDeferred(out, id)
			continue
		}
		if p.withdrawn(out, id, m.stage) {
			continue
		}
		p.buf = append(p.buf, id)
	}
	pw.forming = pw.forming[:0]
	p.reload(w)
	if len(p.buf) == 0 {
		p.fill(now, w, out)
		return
	}
	p.path[0] = dataplane.PathHop{Stage: m.stage, Worker: w}
	out.Dispatch(m.app, p.buf, p.path[:])
	pw.running = append(pw.running[:0], p.buf...)
	pw.busy = true
	p.reload(w)
	pw.runStart = now
	pw.runNom = p.dep.Stages[m.stage].Lat(len(p.buf))
	p.fill(now, w, out)
}

// tick is the state planner (PARD §4.2–§4.3): publish q, T_in, μ, ε and the mode, draw the
// downstream wait sums, refresh L_sub, budgets, throttles and the worker count.
func (p *Pipeline) tick(now dataplane.Time) {
	p.tickCount++
	for ai := range p.apps {
		a := &p.apps[ai]
		for _, s := range a.mods {
			p.tickModule(now, &p.mods[s])
		}
		if p.autoscale {
			p.scale(now, a)
			for _, s := range a.mods {
				p.reindex(&p.mods[s], now)
			}
		}
		p.sample(a)
		if p.variant.rule == ruleWCL {
			p.wclBudgets(a)
		}
		if p.variant.rule == ruleOC {
			for _, s := range a.mods {
				p.mods[s].throttle = false
			}
			for _, s := range a.mods {
				m := &p.mods[s]
				if m.q1 > p.ocT {
					m.throttle = true
					for _, x := range m.ances {
						p.mods[x].throttle = true
					}
				}
			}
		}
	}
}

func (p *Pipeline) tickModule(now dataplane.Time, m *pardModule) {
	// Windowed queueing delay, linearly weighted (PARD §4.2, footnote 4): weight 1 −
	// age/window.
	var ws, wc, s1, c1 float64
	cur := int64(now / (100 * dataplane.Millisecond))
	for i := range m.qb {
		b := &m.qb[i]
		if b.n < 0 {
			continue
		}
		mid := dataplane.Time(b.n)*100*dataplane.Millisecond + 50*dataplane.Millisecond
		age := now - mid
		if age < 0 {
			age = 0
		}
		if age >= p.window {
			continue
		}
		wt := 1 - float64(age)/float64(p.window)
		ws += wt * b.sum
		wc += wt * b.cnt
		if cur-b.n < 10 {
			s1 += b.sum
			c1 += b.cnt
		}
	}
	m.q, m.q1 = 0, 0
	if wc > 0 {
		m.q = dataplane.Time(ws / wc)
	}
	if c1 > 0 {
		m.q1 = dataplane.Time(s1 / c1)
	}
	// Input rate in sync-sized buckets, its moving mean and ε.
	tin := float64(m.inCur) / (float64(p.sync) / float64(dataplane.Second))
	m.inCur = 0
	m.tin[m.rpos] = tin
	var sm, mu float64
	k := min(p.smoothN, m.rn+1)
	for i := 0; i < k; i++ {
		sm += m.tin[(m.rpos-i+len(m.tin)*2)%len(m.tin)]
	}
	m.ts[m.rpos] = sm / float64(k)
	k = min(p.muN, m.rn+1)
	for i := 0; i < k; i++ {
		mu += m.tin[(m.rpos-i+len(m.tin)*2)%len(m.tin)]
	}
	mu /= float64(k)
	m.rpos = (m.rpos + 1) % len(m.tin)
	if m.rn < len(m.tin) {
		m.rn++
	}
	var dev, tot float64
	for i := 0; i < m.rn; i++ {
		dev += math.Abs(m.tin[i] - m.ts[i])
		tot += m.tin[i]
	}
	m.eps = 0
	if tot > 0 {
		m.eps = dev / tot
	}
	if p.fixedEps >= 0 {
		m.eps = p.fixedEps
	}
	// Load factor μ = T_in / Σ_workers b/d(b).
	var cap float64
	for _, w := range m.workers {
		if p.workers[w].activeAt <= now && !p.workers[w].down {
			cap += float64(m.batch) / (float64(m.d) / float64(dataplane.Second))
		}
	}
	m.mu = math.Inf(1)
	if cap > 0 {
		m.mu = mu / cap
	} else if mu == 0 {
		m.mu = 0
	}
	switch {
	case m.mu > 1+m.eps:
		m.hbf = true
	case m.mu < 1-m.eps:
		m.hbf = false
	}
	if p.variant.rule == ruleWCL {
		copy(m.wclHist[1:], m.wclHist[:len(m.wclHist)-1])
		m.wclHist[0] = m.wclCur
		m.wclCur = nil
	}
}

// sample draws the downstream batch-wait sums and publishes L_sub for every module of a
// (PARD §4.2; the paper only says "random sampling of recent arrivals", so the sampler is
// ours): sample m of a path is Σ u_i·d_i with u_i drawn independently
// from module i's ring of normalized waits (U[0,1] while the ring holds < 100 entries).
// One draw per module and sample is shared by every path, so the cost is O(M·N) plus one
// selection per path instead of O(M·N²).
func (p *Pipeline) sample(a *pardApp) {
	need := p.variant.rule == ruleEq3 && p.variant.lsub == lsubFull && p.variant.w == wQuantile && p.lambda > 0 && p.lambda < 1
	if need {
		for mi := 0; mi < p.samples; mi++ {
			for _, s := range a.mods {
				m := &p.mods[s]
				var u float64
				if m.uN < 100 {
					u = p.rng.Float64()
				} else {
					u = float64(m.u[p.rng.IntN(m.uN)])
				}
				a.draw[s] = u * float64(m.d)
			}
			for _, s := range a.mods {
				m := &p.mods[s]
				for pi := range m.paths {
					pp := &m.paths[pi]
					var sum float64
					for _, x := range pp.mods {
						sum += a.draw[x]
					}
					pp.samps[mi] = sum
				}
			}
		}
	}
	for _, s := range a.mods {
		m := &p.mods[s]
		m.lsub, m.w = 0, 0
		for pi := range m.paths {
			pp := &m.paths[pi]
			var l, w dataplane.Time
			switch p.variant.lsub {
			case lsubBack:
				l = 0
			case lsubSF:
				l = pp.sumD
			default:
				for _, x := range pp.mods {
					l += p.mods[x].q + p.mods[x].d
				}
				if p.hopInLsub {
					l += pp.hops
				}
				switch {
				case len(pp.mods) == 0:
					w = 0
				case p.variant.w == wLower || p.lambda <= 0:
					w = 0
				case p.variant.w == wUpper || p.lambda >= 1:
					w = pp.sumD
				default:
					w = dataplane.Time(Quantile(pp.samps[:p.samples], p.lambda))
				}
				l += w
			}
			m.lsub = max(m.lsub, l)
			m.w = max(m.w, w)
		}
	}
}

// wclBudgets reallocates budgets ∝ the p99 of Q+W+D over the window (pard-wcl).
func (p *Pipeline) wclBudgets(a *pardApp) {
	var tmp []dataplane.Time
	for _, s := range a.mods {
		m := &p.mods[s]
		tmp = tmp[:0]
		for _, h := range m.wclHist {
			tmp = append(tmp, h...)
		}
		if len(tmp) == 0 {
			m.wcl = 2 * m.d
			continue
		}
		sort.Slice(tmp, func(i, j int) bool { return tmp[i] < tmp[j] })
		m.wcl = tmp[min(len(tmp)-1, int(math.Ceil(0.99*float64(len(tmp))))-1)]
	}
	// Largest Σ WCL over source→sink paths through each module.
	pre := map[dataplane.StageID]dataplane.Time{}
	for _, s := range a.mods {
		var best dataplane.Time
		for pi := range p.mods {
			for _, n := range p.dep.Stages[pi].Next {
				if n == s && p.mods[pi].used {
					best = max(best, pre[dataplane.StageID(pi)])
				}
			}
		}
		pre[s] = best + p.mods[s].wcl
	}
	for i := len(a.mods) - 1; i >= 0; i-- {
		s := a.mods[i]
		m := &p.mods[s]
		var down dataplane.Time
		for _, pp := range m.paths {
			var x dataplane.Time
			for _, y := range pp.mods {
				x += p.mods[y].wcl
			}
			down = max(down, x)
		}
		tot := pre[s] + down
		m.budget = dataplane.Time(float64(m.slo) * float64(m.wcl) / float64(max(tot, 1)))
	}
}

// scale is the rate-based autoscaler (Nexus/InferLine style, as PARD §5.1 uses): provision
// every module for the application's input rate averaged over scale_window_s, keep capacity
// for the highest such rate of the last scale_down_s, and let new workers serve only after the
// cold start.
func (p *Pipeline) scale(now dataplane.Time, a *pardApp) {
	n := len(a.ingress)
	a.ingress[int(p.tickCount)%n] = a.inCur
	a.inCur = 0
	var sum int64
	k := min(int(p.tickCount), p.scaleWin)
	for i := 0; i < k; i++ {
		sum += a.ingress[(int(p.tickCount)-i+n)%n]
	}
	rate := 0.0
	if k > 0 {
		rate = float64(sum) / (float64(k) * float64(p.sync) / float64(dataplane.Second))
	}
	rn := len(a.rate5)
	a.rate5[int(p.tickCount)%rn] = rate
	peak := rate
	for i := 0; i < min(int(p.tickCount), rn); i++ {
		peak = max(peak, a.rate5[i])
	}
	for _, s := range a.mods {
		m := &p.mods[s]
		per := float64(m.batch) / (float64(m.d) / float64(dataplane.Second))
		r := peak
		if p.scaleByMod {
			r = p.moduleRate(m)
		}
		want := int(math.Ceil(r * p.headroom / per))
		want = min(max(want, 1), len(m.workers))
		// A failed worker is no capacity: the scaler provisions a spare in its place.
		have := 0
		for _, w := range m.workers {
			if pw := &p.workers[w]; pw.activeAt != dataplane.Never && !pw.down {
				have++
			}
		}
		switch {
		case want > have:
			for _, w := range m.workers {
				if have == want {
					break
				}
				if pw := &p.workers[w]; pw.activeAt == dataplane.Never && !pw.down {
					pw.activeAt = now + p.coldStart
					have++
				}
			}
		case want < have:
			// Retire the last provisioned workers first (pending ones before serving
			// ones); a retired worker drains what it already queued.
			for i := len(m.workers) - 1; i >= 0 && have > want; i-- {
				if pw := &p.workers[m.workers[i]]; pw.activeAt > now && pw.activeAt != dataplane.Never && !pw.down {
					pw.activeAt = dataplane.Never
					have--
				}
			}
			for i := len(m.workers) - 1; i >= 0 && have > want; i-- {
				if pw := &p.workers[m.workers[i]]; pw.activeAt != dataplane.Never && !pw.down {
					pw.activeAt = dataplane.Never
					have--
				}
			}
		}
	}
}

// moduleRate is the module's own input rate as a per-module autoscaler sees it: the mean
// T_in over scale_window_s, and for scaling down the highest such mean of the last
// scale_down_s (bounded by the ε window the module keeps). Upstream drops and upstream
// capacity shape it, so downstream modules scale up only after upstream ones did, which
// is how bursts reach later modules of a real pipeline while they are still cold.
func (p *Pipeline) moduleRate(m *pardModule) float64 {
	n := len(m.tin)
	avg := func(end int) float64 { // mean of the scaleWin buckets ending end buckets ago
		var s float64
		k := 0
		for i := end; i < end+p.scaleWin && i < m.rn; i++ {
			s += m.tin[(m.rpos-1-i+2*n)%n]
			k++
		}
		if k == 0 {
			return 0
		}
		return s / float64(k)
	}
	peak := avg(0)
	for end := 1; end+p.scaleWin <= min(m.rn, p.scaleDown+p.scaleWin); end++ {
		peak = max(peak, avg(end))
	}
	return peak
}

// ModuleState is a read-only snapshot of one module's state planner (for reports and tests).
type ModuleState struct {
	Stage dataplane.StageID
	// Q is the windowed queueing delay, W the batch-wait quantile and Lsub the published
	// downstream estimate (max over paths).
	Q, W, Lsub dataplane.Time
	// Mu is the load factor, Eps the hysteresis half-width, HBF the current mode.
	Mu, Eps float64
	HBF     bool
	// Active is the number of workers serving now; Provisioned includes cold ones (a failed
	// worker counts in neither).
	Active, Provisioned int
	// Budget is the per-module budget of the split/WCL/Clipper++ rules.
	Budget dataplane.Time
}

// State returns the state planner's snapshot of every pipeline module at time now.
func (p *Pipeline) State(now dataplane.Time) []ModuleState {
	var out []ModuleState
	for _, a := range p.apps {
		for _, s := range a.mods {
			m := &p.mods[s]
			ms := ModuleState{Stage: s, Q: m.q, W: m.w, Lsub: m.lsub, Mu: m.mu, Eps: m.eps, HBF: m.hbf, Budget: m.budget}
			for _, w := range m.workers {
				if at := p.workers[w].activeAt; at != dataplane.Never && !p.workers[w].down {
					ms.Provisioned++
					if at <= now {
						ms.Active++
					}
				}
			}
			out = append(out, ms)
		}
	}
	return out
}

// Quantile returns F⁻¹(λ) of the empirical distribution of xs: the smallest x with
// F(x) ≥ λ. It reorders xs (quickselect, O(n) expected, deterministic pivots).
func Quantile(xs []float64, lambda float64) float64 {
	n := len(xs)
	if n == 0 {
		return 0
	}
	k := int(math.Ceil(lambda*float64(n))) - 1
	k = min(max(k, 0), n-1)
	lo, hi := 0, n-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		// median of three as pivot
		a, b, c := xs[lo], xs[mid], xs[hi]
		piv := b
		if (a <= b) == (b <= c) {
			piv = b
		} else if (b <= a) == (a <= c) {
			piv = a
		} else {
			piv = c
		}
		i, j := lo, hi
		for i <= j {
			for xs[i] < piv {
				i++
			}
			for xs[j] > piv {
				j--
			}
			if i <= j {
				xs[i], xs[j] = xs[j], xs[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return xs[k]
		}
	}
	return xs[k]
}

// Policies lists PARD's policies, its baselines and ablations for the registry; they serve
// PARD plans (Kind) and any pipeline deployment built by NewPipelineDeployment.
func Policies() []dataplane.PolicySpec {
	out := make([]dataplane.PolicySpec, 0, len(pardVariants))
	for _, v := range pardVariants {
		name := v.name
		out = append(out, dataplane.PolicySpec{Name: name, Doc: v.doc, Serves: []string{Kind},
			New: func(cfg dataplane.Config) (dataplane.Policy, error) {
				p, err := NewPipeline(name, cfg)
				if err != nil {
					return nil, err
				}
				if p.variant.rule != ruleEq3 {
					return p, nil
				}
				return DoorPipeline{p}, nil
			}})
	}
	return out
}

// skipSeed seeds the coin of conditional modules (dataplane.SkipCoin): a constant, so a
// trace's requests skip the same modules in every run, simulated or served.
const skipSeed = 1
