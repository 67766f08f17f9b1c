// Package dyorc is DyOrc's data plane (Zhang et al., SoCC '25):
// dynamic workflows whose service calls appear one by one, component-level batching per
// service across workflows on totipotent GPU workers, a per-application first-order Markov
// predictor learned online, the speculative dynamic-programming scheduler with reservations
// (re-run at every real call; the paper's binding of a predicted call is dyorc-literal, see
// Options.Literal), proactive loading with LRU eviction, and the baselines (greedy,
// round-robin, Ray-like, Triton-like fixed placement, oracle prediction).
//
// Mapping onto the engine [ours]: every (app, step, service) is a Routed stage whose
// Result.Branch the driver draws through Deployment.Emulate (the workflow's probabilities, a
// seeded u); every GPU has one engine worker per stage, and the policy runs one batch per GPU
// at a time (DyOrc §6.1) by dispatching the per-stage parts of a service batch together on
// that GPU's workers with the batch's joint duration, so requests of different workflows and
// steps share one batch (DyOrc §5.1). Model loads go through the engine's Load/Evict on one holder
// worker per (GPU, service); the policy keeps the per-GPU memory account. The simulator counts
// a GPU busy once however many of its workers run parts of one batch (sim's utilization).
package dyorc

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/plan-dev/plan/formats/sections/dyorcsec"
)

// Kind is the plan section DyOrc deployments come from.
const Kind = "dyorc"

// Service is one model callable by any workflow.
type Service struct {
	Name     string
	Bytes    int64   // GPU memory: weights + activation reserve
	WeightGB float64 // for load times
	MaxBatch int
	// BaseUs + PerItemUs·b is the latency of a batch of b items: a linear stand-in of ours, as
	// the paper publishes no profiles.
	BaseUs, PerItemUs float64
	OutBytes          int64 // per item
	Tensor            bool  // output moves by the tensor tier (else tier 3)
	// Spread is the relative half-width of a request's own work (work_spread; Meta.work).
	Spread float64
}

// Lat is the latency of a batch of b items (at least 1).
func (s *Service) Lat(b int) float64 { return s.BaseUs + s.PerItemUs*float64(max(b, 1)) }

// ExpLat is the expected latency of a batch of b items under the service's work spread
// (Meta.work): base·E[max f] + per_item·b, where the largest of b factors drawn from
// U(1−s, 1+s) has mean 1 − s + 2s·b/(b+1). The spread is a property of the service's
// profile, not of any request, so a scheduler may plan with it; with no spread it is Lat.
func (s *Service) ExpLat(b int) float64 {
	b = max(b, 1)
	if s.Spread <= 0 {
		return s.Lat(b)
	}
	fmax := 1 - s.Spread + 2*s.Spread*float64(b)/float64(b+1)
	return s.BaseUs*fmax + s.PerItemUs*float64(b)
}

// Node is one possible call of a workflow: a step (or one service of a choice step).
type Node struct {
	Step  int // index in the app's step list (loop: body)
	Svc   int // index into Workflow.Services
	Items int // fan-out copies, batched as items of one task [ours]
	Name  string
}

// App is a compiled workflow.
type App struct {
	Name    string
	SLOUs   float64
	RateRPS float64
	Steps   []dyorcsec.Step
	Loop    *dyorcsec.Loop
	Nodes   []Node
	// stepNodes[j] are step j's nodes (one per service, choice services in name order) and
	// stepWeights[j] their choice weights (nil for a plain step).
	stepNodes   [][]int
	stepWeights [][]float64
}

// Workflow is the compiled workflows section.
type Workflow struct {
	Services []Service
	SvcIndex map[string]int
	Apps     []App
}

// Compile compiles a workflows section. Steps run in list order, one call at a time (steps
// are listed after their inputs; independent steps are serialised [ours]); a loop repeats
// its body until it stops with p_stop.
func Compile(wf *dyorcsec.Workflows) (*Workflow, error) {
	if wf == nil {
		return nil, fmt.Errorf("no workflows section")
	}
	w := &Workflow{SvcIndex: map[string]int{}}
	for _, n := range slices.Sorted(maps.Keys(wf.Services)) {
		s := wf.Services[n]
		sv := Service{Name: n, Bytes: dyorcsec.ServiceBytes(s), WeightGB: s.WeightsGB, MaxBatch: max(s.MaxBatch, 1),
			OutBytes: int64(s.OutKB * 1024), Tensor: s.OutKind != "general", Spread: s.WorkSpread}
		if s.Latency == nil {
			return nil, fmt.Errorf("workflows.services.%s: no inline latency (profile latencies for workflow services are not supported yet)", n)
		}
		sv.BaseUs, sv.PerItemUs = s.Latency.BaseUs, s.Latency.PerItemUs
		if sv.Lat(1) <= 0 {
			return nil, fmt.Errorf("workflows.services.%s.latency: a batch of 1 takes %g µs: must be > 0", n, sv.Lat(1))
		}
		w.SvcIndex[n] = len(w.Services)
		w.Services = append(w.Services, sv)
	}
	for _, n := range slices.Sorted(maps.Keys(wf.Apps)) {
		a := wf.Apps[n]
		app := App{Name: n, SLOUs: float64(time.Duration(a.SLO).Microseconds()), RateRPS: a.RateRPS, Steps: a.Steps, Loop: a.Loop}
		if app.SLOUs <= 0 {
			app.SLOUs = 60e6 // [ours] no SLO given: 60 s, only for the late/completed split
		}
		steps := a.Steps
		if a.Loop != nil {
			steps = a.Loop.Body
			for j, s := range steps {
				if s.When != "" {
					return nil, fmt.Errorf("workflows.apps.%s.loop.body[%d].when: guards inside a loop body are not supported yet", n, j)
				}
			}
		}
		app.stepNodes = make([][]int, len(steps))
		app.stepWeights = make([][]float64, len(steps))
		for j, s := range steps {
			svcs := []string{s.Service}
			if len(s.Choice) > 0 {
				svcs = svcs[:0]
				for c := range s.Choice {
					svcs = append(svcs, c)
				}
				sort.Strings(svcs)
			}
			for _, c := range svcs {
				si, ok := w.SvcIndex[c]
				if !ok {
					return nil, fmt.Errorf("workflows.apps.%s: step %s: unknown service %q", n, s.ID, c)
				}
				app.stepNodes[j] = append(app.stepNodes[j], len(app.Nodes))
				if len(s.Choice) > 0 {
					app.stepWeights[j] = append(app.stepWeights[j], s.Choice[c])
				}
				name := s.ID
				if len(s.Choice) > 0 {
					name += ":" + c
				}
				app.Nodes = append(app.Nodes, Node{Step: j, Svc: si, Items: max(s.Fanout, 1), Name: name})
			}
		}
		w.Apps = append(w.Apps, app)
	}
	if len(w.Apps) == 0 {
		return nil, fmt.Errorf("workflows: no apps")
	}
	return w, nil
}

// Exit marks the end of a workflow in a path.
const Exit = -1

// body returns the steps the app iterates over.
func (a *App) body() []dyorcsec.Step {
	if a.Loop != nil {
		return a.Loop.Body
	}
	return a.Steps
}

// Next draws the node that follows node cur (-1 = the request just arrived) in round round
// (loops; 0-based) from the workflow's ground truth, or Exit. Only the driver's emulation and
// the oracle policy may call it: the scheduler never sees p, choice weights or p_stop, and learns
// only from the calls it observes (DyOrc §5.2).
func (a *App) Next(cur, round int, rng *rand.Rand) (node, nextRound int) {
	steps := a.body()
	from := 0
	if cur >= 0 {
		from = a.Nodes[cur].Step + 1
	}
	for {
		for j := from; j < len(steps); j++ {
			s := &steps[j]
			if s.When != "" && rng.Float64() >= s.P {
				continue
			}
			ns := a.stepNodes[j]
			if len(ns) == 1 {
				return ns[0], round
			}
			u, acc := rng.Float64(), 0.0
			for i, n := range ns {
				acc += a.stepWeights[j][i]
				if u < acc {
					return n, round
				}
			}
			return ns[len(ns)-1], round
		}
		if a.Loop == nil {
			return Exit, round
		}
		// End of a loop round: stop with p_stop[round], else start the next round.
		if round >= a.Loop.MaxIter-1 || round >= len(a.Loop.PStop) || rng.Float64() < a.Loop.PStop[round] {
			return Exit, round
		}
		round++
		from = 0
	}
}

// Path draws a whole request's node sequence from rng (the ground truth of one request).
func (a *App) Path(rng *rand.Rand) []int {
	var out []int
	cur, round := -1, 0
	for len(out) < 64 {
		n, r := a.Next(cur, round, rng)
		if n == Exit {
			break
		}
		out = append(out, n)
		cur, round = n, r
	}
	return out
}

// SampleRNG is the generator of request sample s's ground truth (Attrs.Sample ≠ 0): sim's
// emulation and the oracle policy draw the same path from it.
func SampleRNG(app int, sample int64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(sample), uint64(app)*0x9e3779b97f4a7c15+1))
}

// uRand is a generator that uRNG seeds anew for each transition.
type uRand struct {
	pcg rand.PCG
	r   *rand.Rand
}

// uRands recycles the transition generators: the emulation draws one at every stage that ends
// (a PCG and a Rand each, allocated), and a Meta may serve concurrent runs.
var uRands = sync.Pool{New: func() any {
	g := &uRand{}
	g.r = rand.New(&g.pcg)
	return g
}}

// uRNG turns the driver's uniform u into a generator for the several draws of one transition,
// to hand back with putURNG.
func uRNG(u float64) *uRand {
	g := uRands.Get().(*uRand)
	g.pcg.Seed(math.Float64bits(u), 0xd1b54a32d192ed03) // as rand.NewPCG seeds
	return g
}

func putURNG(g *uRand) { uRands.Put(g) }

// ExpectedItems returns the expected batch items each service serves per request of the app
// (guard probabilities, choice weights, fan-out and the loop's stopping chances): what the
// planner places services for. Only planning reads it; the scheduler never does (it learns
// from observed calls, DyOrc §5.2).
func (a *App) ExpectedItems(nsvc int) []float64 {
	out := make([]float64, nsvc)
	rounds := 1.0
	if a.Loop != nil {
		rounds, reach := 0.0, 1.0
		for r := 0; r < a.Loop.MaxIter; r++ {
			rounds += reach
			if r < len(a.Loop.PStop) {
				reach *= 1 - a.Loop.PStop[r]
			}
		}
		return a.expected(out, rounds)
	}
	return a.expected(out, rounds)
}

func (a *App) expected(out []float64, rounds float64) []float64 {
	for j, s := range a.body() {
		pj := 1.0
		if s.When != "" {
			pj = s.P
		}
		for i, n := range a.stepNodes[j] {
			w := 1.0
			if a.stepWeights[j] != nil {
				w = a.stepWeights[j][i]
			}
			nd := a.Nodes[n]
			out[nd.Svc] += rounds * pj * w * float64(nd.Items)
		}
	}
	return out
}
