package pard

import (
	"math/rand/v2"

	"github.com/plan-dev/plan/dataplane"
)

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

// budgetForm is how a reactive baseline measures the latency a request has consumed against
// its share of the SLO (PARD §5.1: SLO_k = SLO·d_k/Σd; the text does not say local or
// cumulative, so both are variants).
type budgetForm uint8

const (
	budgetE2E   budgetForm = iota // nexus: t_e + d_k − t_s against the end-to-end SLO
	budgetLocal                   // latency at this module (from t_r) against SLO_k
	budgetCum                     // latency since t_s against Σ_{i≤k} SLO_i (the module's cumulative deadline)
)

// checkAt is when a reactive baseline's test runs (the text: "before inference").
type checkAt uint8

const (
	checkTB      checkAt = iota // at t_b, when the broker takes the request into the forming batch
	checkTE                     // at t_b with the latency measured to t_e, the batch's expected start
	checkEnqueue                // on arrival at the module (t_r), against Σ_{i<k} SLO_i
)

type pardVariant struct {
	name, doc string
	order     pardOrder
	rule      pardRule
	lsub      lsubMode
	w         wMode
	instant   bool
	// Reactive baselines' readings (clipper++ and nexus variants).
	budget budgetForm
	check  checkAt
	expire bool // also drop a request already past its end-to-end deadline (mid-pipeline)
}

// pardVariants are the registered pipeline policies (PARD §5.1 baselines, Table 1 ablations).
//
// The baselines' defaults are the readings of §5.1 that reproduce what the paper measured of
// them (bench/pardbench/RESULTS.md §1): clipper++ compares the latency since t_s with the
// module's cumulative share of the SLO, Σ_{i≤k} SLO_i, which degrades past capacity as in
// Fig. 14 and collapses on lv-tweet as in Fig. 2. The spec's [ours] local form (t_b − t_r >
// SLO_k) is clipper++-local: it bounds the queueing at each module, acts as admission control
// at the bottleneck and does not degrade, unlike anything the paper reports of Clipper++.
var pardVariants = []pardVariant{
	{name: "none", doc: "pipeline baseline (Naive): FIFO, never drops; late completions count as drops", order: orderFIFO, rule: ruleNone},
	{name: "nexus", doc: "pipeline baseline Nexus: FIFO, sliding-window drop on L_pre+L_cur against the end-to-end deadline (param split=true: per-stage deadlines)", order: orderFIFO, rule: ruleNexus},
	{name: "clipper++", doc: "pipeline baseline Clipper++ (the reading that reproduces PARD Fig. 2/14): FIFO, fixed SLO split ∝ d_k, drop at t_b when the latency since t_s already exceeds the cumulative deadline Σ_{i≤k} SLO_i", order: orderFIFO, rule: ruleClipper, budget: budgetCum},
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
	// The other readings of the baselines' text (PARD §5.1), after the
	// ablations so the table's order stays.
	{name: "nexus-split", doc: "Nexus reading: window rule against per-stage budgets SLO_k = SLO·d_k/Σd, latency from t_r (Nexus's own per-stage deadlines; reduces to head-drop)", order: orderFIFO, rule: ruleNexus, budget: budgetLocal},
	{name: "nexus-cum", doc: "Nexus reading: window rule against the module's cumulative deadline Σ_{i≤k} SLO_i from t_s", order: orderFIFO, rule: ruleNexus, budget: budgetCum},
	{name: "clipper++-local", doc: "Clipper++ reading: drop at t_b when the queueing delay at the module t_b − t_r exceeds SLO_k (ignores W and D)", order: orderFIFO, rule: ruleClipper, budget: budgetLocal},
	{name: "clipper++-local-te", doc: "Clipper++ reading: drop when the latency at the module to the batch's start t_e − t_r exceeds SLO_k (before inference)", order: orderFIFO, rule: ruleClipper, budget: budgetLocal, check: checkTE},
	{name: "clipper++-local-expire", doc: "Clipper++ reading: local budget at t_b, and a request already past its end-to-end deadline is dropped at its next module", order: orderFIFO, rule: ruleClipper, budget: budgetLocal, expire: true},
	{name: "clipper++-cum-te", doc: "Clipper++ reading: drop when t_e − t_s exceeds the cumulative deadline Σ_{i≤k} SLO_i (before inference)", order: orderFIFO, rule: ruleClipper, budget: budgetCum, check: checkTE},
	{name: "clipper++-enqueue", doc: "Clipper++ reading: drop on arrival at module k when t_r − t_s already exceeds the deadline of the modules before it, Σ_{i<k} SLO_i", order: orderFIFO, rule: ruleClipper, budget: budgetCum, check: checkEnqueue},
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

// Pipeline is the pipeline executor: one instance runs one variant (pard, nexus, ...).
type Pipeline struct {
	variant pardVariant
	cfg     dataplane.Config
	// cfgOpts are the configuration's options over the defaults (NewPipeline: TickEvery);
	// opts those in effect after Attach merged the plan's.
	cfgOpts, opts Options

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
	qDropped   bool
	doomed     map[dataplane.ReqID]pardDrop
	rng        *rand.Rand
	mods       []pardModule // indexed by StageID
	workers    []pardWorker // indexed by WorkerID (only pipeline workers are used)
	apps       []pardApp
	flags      dataplane.IDTable[uint8] // per request: gone (a drop was decided); Forget trims it
	merges     []dataplane.StageID      // modules where DAG branches join (join map keys)
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
	budget   dataplane.Time // split / WCL budget; SLO_k of the reactive baselines
	// cumBudget is the module's cumulative deadline Σ_{i≤k} SLO_i (longest prefix) from t_s.
	cumBudget dataplane.Time
	wclCur    []dataplane.Time
	wclHist   [][]dataplane.Time
	wcl       dataplane.Time
	throttle  bool
	credit    float64
	rr        int
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

// Name implements Policy.
func (p *Pipeline) Name() string { return p.variant.name }

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
