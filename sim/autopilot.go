package sim

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/plan-dev/plan/dataplane"
	ap "github.com/plan-dev/plan/dataplane/autopilot"
)

// AutopilotRun is `plan simulate --autopilot`: the loop of
// dataplane/autopilot — the same observe, forecast, decide code `plan serve --autopilot`
// runs — ticked in virtual time over a trace's arrivals, with the solver in process.
type AutopilotRun struct {
	Loop ap.Config
	// Start is the plan served at time 0; Solver re-plans (synchronously: virtual time stands
	// still while it solves).
	Start  ap.Candidate
	Solver ap.Solver
	// Deploy builds a candidate's deployment and a fresh policy for it.
	Deploy func(c ap.Candidate) (*dataplane.Deployment, dataplane.Policy, error)
	// Arrivals are each application's arrival times (sorted), in the loop's application
	// order; Attrs, when set, gives the attributes of application a's n-th arrival.
	Arrivals [][]dataplane.Time
	Attrs    func(a dataplane.AppID, n int64) dataplane.Attrs
	// LLM, when set, gives each application's LLM class (an LLM plan): an arrival the
	// trace gives no tokens draws them from its class seeded by its application and index,
	// so a request has the same tokens whichever plan serves it (the autopilot's segments,
	// the static, peak and mean plans) and the loop observes them. On time is the
	// request's end-to-end deadline (QLM's SLO), as the switched replay judges every
	// request: a class's TTFT and TPOT SLOs are not counted here.
	LLM []LLMClass
	// Duration is the arrival window (the loop ticks until it ends).
	Duration dataplane.Time
	// LoadTime is how long a new placement takes to load its models: a switch decided at t
	// takes requests from t + LoadTime (the old plan serves until then, and both plans' GPUs
	// count meanwhile).
	LoadTime dataplane.Time
	// ResolveDelay is how long a re-solve takes: the loop hears its answer (and switches)
	// that long after it asked, ticking and observing meanwhile, as serve's background
	// re-solve does in wall time. 0: at once (serve pre-solves the ladder's rungs next to
	// the served one, so a step up usually finds its plan cached). MeasureResolve: each
	// re-solve's own wall time here (what serve would take on this machine; not
	// deterministic).
	ResolveDelay   dataplane.Time
	MeasureResolve bool
	Seed           uint64
	Jitter         float64
	// OnFinish, when set, sees every request of every segment when it finishes (tests count
	// each trace ID exactly once).
	OnFinish func(seg int, now dataplane.Time, r *dataplane.Request)
	// Progress, when set, hears how far a run is: phase "loop" (the autopilot's windows
	// decided of the trace's) then "replay" (plan segments simulated), done of total.
	Progress func(phase string, done, total int)
}

// Segment is the span one plan served.
type Segment struct {
	Digest     string  `json:"digest"`
	GPUs       int     `json:"gpus"`
	StartS     float64 `json:"start_s"`
	EndS       float64 `json:"end_s"`
	Requests   int64   `json:"requests"`
	Attainment float64 `json:"attainment"`
}

// AutopilotResult is a run's outcome: attainment over every request, GPU-hours held and
// the loop's switches and decisions.
type AutopilotResult struct {
	Requests   int64         `json:"requests"`
	Met        int64         `json:"met"`
	Attainment float64       `json:"attainment"`
	GPUHours   float64       `json:"gpu_hours"`
	Switches   int           `json:"switches"`
	Segments   []Segment     `json:"segments"`
	Decisions  []ap.Decision `json:"decisions,omitempty"`
	// MAPE is each application's one-step forecast error over the run.
	MAPE []float64 `json:"mape,omitempty"`
}

// switchAt is an installed plan and when it takes requests.
type switchAt struct {
	at, decided dataplane.Time
	c           ap.Candidate
}

type simInstaller struct {
	load     dataplane.Time
	switches []switchAt
}

func (s *simInstaller) Install(now dataplane.Time, c ap.Candidate) error {
	s.switches = append(s.switches, switchAt{at: now + s.load, decided: now, c: c})
	return nil
}

// RunAutopilot runs the loop over the arrivals, then simulates each plan's segment: the
// requests arriving in it are admitted to its plan's engine and finish there, as serve's
// generations do.
func RunAutopilot(ctx context.Context, run *AutopilotRun) (*AutopilotResult, error) {
	if run.Solver == nil || run.Deploy == nil {
		return nil, errors.New("sim: autopilot run without a solver or a deployer")
	}
	inst := &simInstaller{load: run.LoadTime}
	loop, err := ap.New(run.Loop, len(run.Arrivals), run.Start, inst, 0)
	if err != nil {
		return nil, err
	}
	window := loop.Config().Window
	tick := window
	next := make([]int, len(run.Arrivals))
	// pending is a re-solve whose answer lands at pending.at (ResolveDelay).
	var pending *solved
	for {
		// The next arrival over every application, in time order (ties: lower app first).
		a, at := -1, dataplane.Never
		for i, ts := range run.Arrivals {
			if next[i] < len(ts) && ts[next[i]] < at {
				a, at = i, ts[next[i]]
			}
		}
		for {
			// A re-solve's answer lands before a tick or an arrival at the same time.
			if pending != nil && pending.at <= at && pending.at <= tick && pending.at <= run.Duration {
				loop.Resolved(pending.at, pending.c, pending.err)
				pending = nil
				continue
			}
			if tick > at || tick > run.Duration {
				break
			}
			if run.Progress != nil {
				run.Progress("loop", int(tick/window), int((run.Duration+window-1)/window))
			}
			if d := loop.Tick(tick); d != nil {
				if pending = solveAt(ctx, run, tick, *d); pending.at == tick {
					loop.Resolved(tick, pending.c, pending.err)
					pending = nil
				}
			}
			tick += window
		}
		if a < 0 || at >= run.Duration {
			break
		}
		var tokens int64
		if run.Attrs != nil || run.LLM != nil {
			x := run.attrs(dataplane.AppID(a), int64(next[a]))
			tokens = int64(x.InTokens) + int64(x.OutTokens)
		}
		loop.Admit(at, a, tokens)
		next[a]++
	}
	res, err := replayPlans(run, run.Start, inst.switches)
	if err != nil {
		return nil, err
	}
	res.Switches = loop.Switches()
	res.Decisions = loop.Decisions()
	res.MAPE = loop.Status().MAPE
	return res, nil
}

// solved is a re-solve's answer and when the loop hears it.
type solved struct {
	at  dataplane.Time
	c   ap.Candidate
	err error
}

// solveAt re-solves for d, asked at now: the answer lands ResolveDelay later (or the
// solve's own wall time with MeasureResolve).
func solveAt(ctx context.Context, run *AutopilotRun, now dataplane.Time, d ap.Demand) *solved {
	t0 := time.Now()
	c, err := run.Solver.Solve(ctx, d)
	delay := run.ResolveDelay
	if run.MeasureResolve {
		delay = dataplane.Time(time.Since(t0) / time.Microsecond)
	}
	return &solved{at: now + max(delay, 0), c: c, err: err}
}

// RunStatic simulates the arrivals of run on plan c alone (no loop): the static plan, or
// the plan solved for the trace's peak, beside the autopilot.
func RunStatic(run *AutopilotRun, c ap.Candidate) (*AutopilotResult, error) {
	return replayPlans(run, c, nil)
}

// PlannedSwitch is a switch decided outside the autopilot's loop, such as a replayed
// autoscaler's (a KEDA ScaledObject's replica changes): Plan serves from From on, its fleet
// held from Decided.
type PlannedSwitch struct {
	Decided, From dataplane.Time
	Plan          ap.Candidate
}

// RunSwitches simulates the arrivals of run on start, then on each switch's plan from its
// From on, through the switched replay the autopilot's and a schedule's runs use (run's
// Solver and Loop are not used).
func RunSwitches(run *AutopilotRun, start ap.Candidate, sw []PlannedSwitch) (*AutopilotResult, error) {
	if run.Deploy == nil {
		return nil, errors.New("sim: a switched run without a deployer")
	}
	at := make([]switchAt, len(sw))
	for i, s := range sw {
		at[i] = switchAt{at: s.From, decided: s.Decided, c: s.Plan}
	}
	res, err := replayPlans(run, start, at)
	if err != nil {
		return nil, err
	}
	res.Switches = len(sw)
	return res, nil
}

// replayPlans simulates the arrivals of run on start, then on each switch's plan from its
// time on (none: a static plan over the whole trace), through the switched replay that
// `plan simulate SCHEDULE` runs too.
func replayPlans(run *AutopilotRun, start ap.Candidate, switches []switchAt) (*AutopilotResult, error) {
	plan := func(c ap.Candidate) *SwitchPlan {
		return &SwitchPlan{Name: c.Digest, GPUs: c.GPUs, Deploy: func() (*dataplane.Deployment, dataplane.Policy, error) { return run.Deploy(c) }}
	}
	r := &Switched{Switches: []Switch{{Plan: plan(start)}}, End: run.Duration, Segment: run.segment}
	for _, s := range switches {
		r.Switches = append(r.Switches, Switch{Decided: s.decided, From: s.at, Plan: plan(s.c)})
	}
	// In order: OnFinish (a test's tally) need not be safe for concurrent use.
	var progress func(done, total int)
	if run.Progress != nil {
		progress = func(done, total int) { run.Progress("replay", done, total) }
	}
	out, err := RunSwitchedWith(context.Background(), 1, progress, r)
	if err != nil {
		return nil, err
	}
	sr := out[0]
	res := &AutopilotResult{Requests: sr.Requests, Met: sr.Met, GPUHours: sr.GPUHours}
	for _, s := range sr.Segments {
		res.Segments = append(res.Segments, Segment{Digest: s.Plan.Name, GPUs: s.Plan.GPUs, StartS: float64(s.From) / 1e6,
			EndS: float64(s.To) / 1e6, Requests: s.Metrics.Total.Requests, Attainment: s.Metrics.Total.Attainment})
	}
	if res.Requests > 0 {
		res.Attainment = round6(float64(res.Met) / float64(res.Requests))
	}
	return res, nil
}

// segment gives the arrivals of run in [from, to) to segment idx, on the engine's clock
// (trace time: the first arrival is at from).
func (run *AutopilotRun) segment(idx int, dep *dataplane.Deployment, from, to dataplane.Time) (*SegmentRun, error) {
	if len(dep.Apps) != len(run.Arrivals) {
		return nil, fmt.Errorf("the plan serves %d applications, the trace %d", len(dep.Apps), len(run.Arrivals))
	}
	srcs := make([]Source, len(run.Arrivals))
	offset := make([]int64, len(run.Arrivals))
	var n int
	for a, ts := range run.Arrivals {
		lo := sort.Search(len(ts), func(i int) bool { return ts[i] >= from })
		hi := sort.Search(len(ts), func(i int) bool { return ts[i] >= to })
		srcs[a] = &Times{T: ts[lo:hi]}
		offset[a] = int64(lo)
		n += hi - lo
	}
	opts := Options{Duration: to, Seed: run.Seed + uint64(idx), Jitter: run.Jitter, ExpectedRequests: n}
	// Trace IDs are global over the run (1 + the index among the app's arrivals), so a
	// request keeps its ID whichever segment serves it.
	opts.Attrs = func(a dataplane.AppID, k int64) dataplane.Attrs {
		x := run.attrs(a, offset[a]+k)
		x.Trace = offset[a] + k + 1
		return x
	}
	if run.OnFinish != nil {
		opts.OnFinish = func(now dataplane.Time, r *dataplane.Request) { run.OnFinish(idx, now, r) }
	}
	return &SegmentRun{Sources: srcs, Options: opts}, nil
}

// attrs is the attributes of application a's n-th arrival: Attrs's, with an LLM class's
// tokens drawn where they give none (seeded by a and n, not by the engine's request ID,
// which differs between the segments that may serve it).
func (run *AutopilotRun) attrs(a dataplane.AppID, n int64) dataplane.Attrs {
	var x dataplane.Attrs
	if run.Attrs != nil {
		x = run.Attrs(a, n)
	}
	if int(a) < len(run.LLM) {
		fillTokens(&run.LLM[a], dataplane.ReqID(uint64(a)<<40|uint64(n+1)), &x)
	}
	return x
}
