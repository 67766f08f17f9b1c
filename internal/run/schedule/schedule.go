// Package schedule is the work of `plan simulate SCHEDULE --trace day.csv`: a schedule of
// plans (plan solve --window) replayed against the rate trace it was solved for, each
// window's plan switched in at its edge, beside the peak plan all day, with its cost and
// attainment per window and its --report (schedule-report.json and the cost and attainment
// plots).
package schedule

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	progressline "github.com/plan-dev/plan/internal/base/progress"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/planner/schedule"
	"github.com/plan-dev/plan/sim"
)

// Args are `plan simulate SCHEDULE`'s inputs.
type Args struct {
	// Systems is the registry the windows' plans are deployed with.
	Systems *systems.Registry
	// Path is the schedule file; Data its bytes (read once by the caller, which told it
	// from a plan).
	Path string
	Data []byte
	// Trace is --trace: the rate trace CSV the schedule was solved for (required).
	Trace string
	// Seed is --seed; Jitter --jitter (relative execution-time noise, default 0).
	Seed   uint64
	Jitter float64
	// Policy is --policy ("" = each plan's own); Params --param KEY=VALUE.
	Policy string
	Params []string
	// Parallel is --parallel: plan segments simulated at once (0 = one per CPU).
	Parallel int
	// Report is --report DIR ("" = none); ReportSet says --report was given (an empty
	// value is then refused).
	Report    string
	ReportSet bool
	// SwitchDelay is --switch-delay, how long a window's new plan takes to serve (default
	// DefaultSwitchDelay); SwitchAhead is --switch-ahead (default true): load it one delay
	// before its window starts.
	SwitchDelay time.Duration
	SwitchAhead bool
	// Windows is --windows "A-B" (or "A"): the schedule's windows A to B (1-based) alone,
	// "" for all.
	Windows string
}

// DefaultSwitchDelay is how long a window's new plan takes before it can serve: its GPUs are
// provisioned and its models loaded while the previous window's plan keeps serving (make
// before break; the overlap is paid for both fleets). 60 s covers a cloud GPU instance
// already booted loading a few GB of weights from local disk; a cold VM takes longer
// (--switch-delay). A schedule is known ahead, so by default (--switch-ahead) the load
// starts one delay before the window's edge and the new plan serves from the edge; with
// --switch-ahead=false the load starts at the edge and the previous plan serves the
// window's first delay (a reactive switch).
const DefaultSwitchDelay = time.Minute

// Report is `plan simulate SCHEDULE --trace day.csv`'s result.
type Report struct {
	Schedule string         `json:"schedule"`
	Trace    string         `json:"trace"`
	SwitchS  float64        `json:"switch_delay_s"`
	Ahead    bool           `json:"switch_ahead"`
	Windows  []WindowResult `json:"windows"`
	// Schedule is every window together (switch segments included); Peak the peak plan all day.
	Overall WindowResult `json:"overall"`
	Peak    WindowResult `json:"peak"`
	// Cost is the schedule's cost plus the overlap of the switches (the old fleet kept
	// while the new one loads); PeakCost the peak plan's all day.
	Cost       float64 `json:"cost"`
	SwitchCost float64 `json:"switch_cost"`
	PeakCost   float64 `json:"peak_cost"`
	Saving     float64 `json:"saving"`
	// RelAttainment = Overall.Attainment / Peak.Attainment (BenchmarkDaySchedule's target: ≥ 0.99).
	RelAttainment float64 `json:"relative_attainment"`
}

// WindowResult is one window's requests and SLO attainment (or the whole run's).
type WindowResult struct {
	StartS     float64 `json:"start_s"`
	EndS       float64 `json:"end_s"`
	Switched   bool    `json:"switched,omitempty"`
	Requests   int64   `json:"requests"`
	OnTime     int64   `json:"on_time"`
	Attainment float64 `json:"attainment"`
	// PeakAttainment is the peak plan's over the same window (windows only).
	PeakAttainment float64 `json:"peak_attainment,omitempty"`
}

func (w *WindowResult) add(c sim.SpanCount) {
	w.Requests += c.Requests
	w.OnTime += c.Met
}

func (w *WindowResult) done() {
	w.Attainment = 1
	if w.Requests > 0 {
		w.Attainment = math.Round(float64(w.OnTime)/float64(w.Requests)*1e6) / 1e6
	}
}

// Run replays a schedule against the rate trace it was solved for, through
// the switched replay `plan simulate --autopilot` runs too (sim.Switched): each window's
// plan switched in at its edge (loaded ahead, or after a reactive switch's delay, the
// previous plan serving meanwhile), and the peak plan over the whole trace. A plan keeps its
// queues while it serves (windows keeping their plan are not cut); a switched-to plan starts
// from empty queues, as a freshly loaded placement does, while the requests the old plan
// admitted drain on it (drain on switch). Both replays see the same arrivals.
func Run(ctx context.Context, a Args, io *run.IO) error {
	path, data := a.Path, a.Data
	switchDelay := a.SwitchDelay
	if switchDelay < 0 {
		return run.UsageErrorf("--switch-delay %s: must be ≥ 0", switchDelay)
	}
	if a.ReportSet || a.Report != "" { // the output rule of every command
		if err := formats.CheckOutputDir(a.Report); err != nil {
			return run.UsageErrorf("--report: %q: %v", a.Report, err)
		}
	}
	s, err := schedule.Decode(path, data)
	if err != nil {
		return run.UsageError(err)
	}
	if a.Windows != "" {
		if s, err = windowRange(s, a.Windows, path); err != nil {
			return err
		}
	}
	if a.Trace == "" || a.Trace == "poisson" {
		return run.UsageErrorf("%s: a schedule replays a rate trace: give --trace day.csv (the trace it was solved for)", path)
	}
	rates, err := schedule.ReadRatesFile(a.Trace)
	if err != nil {
		return run.UsageError(err)
	}
	// A schedule's plans are sized for the rates of the trace it was solved on: another
	// trace would judge them on rates they were never meant for.
	d, err := schedule.TraceDigestOf(a.Trace)
	if err != nil {
		return run.UsageError(err)
	}
	switch {
	case s.TraceDigest == "":
		fmt.Fprintf(io.Err, "warning: %s: records no trace digest (written before schedules did): cannot tell whether --trace %s is the trace it was solved for (%s)\n", path, a.Trace, s.Trace)
	case s.TraceDigest != d:
		return run.UsageErrorf("--trace %s: %s, but the schedule %s was solved for a trace of %s (%s): replay it on that trace, or solve a schedule for this one",
			a.Trace, d, path, s.TraceDigest, s.Trace)
	}
	if end := rates.Start + rates.Span(); s.Windows[len(s.Windows)-1].EndS > end+1e-6 {
		return run.UsageErrorf("--trace %s: ends at %gs, before the schedule %s's last window (%gs)", a.Trace, end, path, s.Windows[len(s.Windows)-1].EndS)
	}
	// Each replay (the schedule's, the peak plan's) holds every request of the trace's
	// windows: the sweep's per-point cap (checkSimulationSize) on the trace's request count.
	if n := scheduleRequests(rates, s.Windows[0].StartS, s.Windows[len(s.Windows)-1].EndS); n > run.MaxRequestsPerPoint {
		return run.UsageErrorf("--trace %s: %.3g requests over the schedule %s's windows %s: more than %d in one replay; replay fewer windows at a time (--windows A-B; %d windows, about %d requests each)",
			a.Trace, n, path, cmp.Or(a.Windows, fmt.Sprintf("1-%d", len(s.Windows))), run.MaxRequestsPerPoint, len(s.Windows), int64(n)/int64(len(s.Windows)))
	}
	params, err := run.ParseParams(a.Params)
	if err != nil {
		return err
	}
	pcfg := dataplane.Config{Policy: a.Policy, Params: params}
	// A plan is deployed once: one kept over several windows, or the same in two, is one.
	cache := map[string]*sim.SwitchPlan{}
	deploy := func(i int, raw []byte, costPerHour float64) (*sim.SwitchPlan, error) {
		if d, ok := cache[string(raw)]; ok {
			return d, nil
		}
		name := fmt.Sprintf("%s: windows[%d].plan", path, i)
		if i < 0 {
			name = path + ": peak.plan"
		}
		doc, err := formats.Decode(name, raw, a.Systems.Sections())
		if err != nil {
			return nil, run.UsageError(err)
		}
		plan, ok := doc.(*formats.Plan)
		if !ok {
			return nil, run.UsageErrorf("%s: not a plan", name)
		}
		dep, pol, err := a.Systems.Deploy(plan)
		if err != nil {
			return nil, run.UsageErrorf("%s: %v", name, err)
		}
		for _, x := range dep.Apps {
			if rates.Column(x.Name) < 0 {
				return nil, run.UsageErrorf("--trace %s: no column for %q, which %s serves", a.Trace, x.Name, name)
			}
		}
		// A policy that cannot serve a plan is bad input, found before any simulation.
		if _, err := a.Systems.Policies().New(dep, pcfg, pol); err != nil {
			return nil, run.UsageErrorf("--policy: %s: %v", name, err)
		}
		d := &sim.SwitchPlan{Name: name, CostPerHour: costPerHour, Deploy: func() (*dataplane.Deployment, dataplane.Policy, error) {
			p, err := a.Systems.Policies().New(dep, pcfg, pol)
			return dep, p, err
		}}
		cache[string(raw)] = d
		return d, nil
	}
	rep := &Report{Schedule: path, Trace: a.Trace, SwitchS: switchDelay.Seconds(), Ahead: a.SwitchAhead}
	sched, peak, err := scheduleReplays(s, rep, a.SwitchDelay, a.SwitchAhead, deploy, newRateSegments(rates, a.Seed, a.Jitter))
	if err != nil {
		return err
	}
	io.Infof("simulate: %d windows of %s and the peak plan at the rates of %s", len(s.Windows), path, a.Trace)
	// The line shows before the first segment ends; its total comes with the first step.
	task := progressline.NewTask(io.Err, io.Quiet, "simulate", "plan segments (schedule and peak plan)", 0)
	res, err := sim.RunSwitchedWith(ctx, a.Parallel, func(done, total int) {
		task.Step(done, total, "")
	}, sched, peak)
	task.Finish("")
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return run.CheckFailed(fmt.Errorf("%s: %w", path, err))
	}
	for i := range rep.Windows {
		rep.Windows[i].add(res[0].Spans[i])
		rep.Windows[i].done()
		rep.Windows[i].PeakAttainment = res[1].Spans[i].Attainment()
	}
	rep.Overall.add(sim.SpanCount{Requests: res[0].Requests, Met: res[0].Met})
	rep.Peak.add(sim.SpanCount{Requests: res[1].Requests, Met: res[1].Met})
	rep.Overall.done()
	rep.Peak.done()
	rep.Overall.StartS, rep.Overall.EndS = s.Windows[0].StartS, s.Windows[len(s.Windows)-1].EndS
	rep.Peak.StartS, rep.Peak.EndS = s.Peak.StartS, s.Peak.EndS
	// The fleets held beyond their windows: each plan from its decision (a load ahead of
	// its edge, or the old plan kept over a reactive switch's delay).
	var windows float64
	for i, e := range s.Windows {
		windows += e.CostPerHour * float64(sched.Spans[i+1]-sched.Spans[i]) / 1e6 / 3600
	}
	rep.SwitchCost = round6(max(res[0].Cost-windows, 0))
	rep.Cost = round6(s.TotalCost + rep.SwitchCost)
	rep.PeakCost = s.PeakCost
	if rep.PeakCost > 0 {
		rep.Saving = round6(1 - rep.Cost/rep.PeakCost)
	}
	if rep.Peak.Attainment > 0 {
		rep.RelAttainment = round6(rep.Overall.Attainment / rep.Peak.Attainment)
	}
	if a.Report != "" {
		if err := writeReport(io, a.Report, s, rep); err != nil {
			return err
		}
	}
	return printReport(io, s, rep)
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// windowRange is s restricted to its windows spec ("A-B" or "A", 1-based, inclusive): their
// costs summed, and the peak plan's over the same span (its cost per hour × the span), so
// the saving compares like with like.
func windowRange(s *schedule.Schedule, spec, path string) (*schedule.Schedule, error) {
	n := len(s.Windows)
	lo, hi, err := parseRange(spec)
	if err != nil || lo < 1 || hi < lo || hi > n {
		return nil, run.UsageErrorf("--windows: %q: must be A-B (or A) with 1 ≤ A ≤ B ≤ %d, the schedule %s's windows", spec, n, path)
	}
	c := *s
	c.Windows = s.Windows[lo-1 : hi]
	c.TotalCost = 0
	for _, w := range c.Windows {
		c.TotalCost += w.Cost
	}
	c.TotalCost = round6(c.TotalCost)
	c.Peak.StartS, c.Peak.EndS = c.Windows[0].StartS, c.Windows[len(c.Windows)-1].EndS
	c.PeakCost = round6(c.Peak.CostPerHour * (c.Peak.EndS - c.Peak.StartS) / 3600)
	c.Peak.Cost = c.PeakCost
	c.Saving = 0
	if c.PeakCost > 0 {
		c.Saving = round6(1 - c.TotalCost/c.PeakCost)
	}
	return &c, nil
}

// parseRange reads "A-B" or "A".
func parseRange(spec string) (int, int, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(spec), "-")
	lo, err := strconv.Atoi(strings.TrimSpace(a))
	if err != nil {
		return 0, 0, err
	}
	if !ok {
		return lo, lo, nil
	}
	hi, err := strconv.Atoi(strings.TrimSpace(b))
	return lo, hi, err
}

// scheduleReplays builds the two replays of a schedule: its windows' plans switched in at
// the windows' edges, and the peak plan all along, both reporting each window. A window
// whose plan differs from the previous one's is a switch: decided one --switch-delay
// before its edge and serving from it (loaded ahead), or decided at the edge and serving
// once loaded (reactive; the previous plan serves meanwhile); the new fleet is held from
// the decision.
func scheduleReplays(s *schedule.Schedule, rep *Report, switchDelay time.Duration, ahead bool, deploy func(int, []byte, float64) (*sim.SwitchPlan, error), seg rateSegments) (sched, peak *sim.Switched, err error) {
	delay := run.Us(switchDelay)
	at := seg.us
	sched = &sim.Switched{End: at(s.Windows[len(s.Windows)-1].EndS), Segment: seg.run}
	first := at(s.Windows[0].StartS)
	var prev *sim.SwitchPlan
	for i, e := range s.Windows {
		d, err := deploy(i, e.Plan, e.CostPerHour)
		if err != nil {
			return nil, nil, err
		}
		edge := at(e.StartS)
		sched.Spans = append(sched.Spans, edge)
		wr := WindowResult{StartS: e.StartS, EndS: e.EndS}
		switch {
		case prev == nil:
			sched.Switches = append(sched.Switches, sim.Switch{Decided: edge, From: edge, Plan: d})
		case prev == d:
		case ahead:
			// A schedule is known ahead: the load starts one delay before the edge (not
			// before the trace: the first plan is up from its start).
			wr.Switched = true
			sched.Switches = append(sched.Switches, sim.Switch{Decided: max(edge-delay, first), From: edge, Plan: d})
		default:
			wr.Switched = true
			sched.Switches = append(sched.Switches, sim.Switch{Decided: edge, From: edge + delay, Plan: d})
		}
		rep.Windows = append(rep.Windows, wr)
		prev = d
	}
	sched.Spans = append(sched.Spans, sched.End)
	pd, err := deploy(-1, s.Peak.Plan, s.Peak.CostPerHour)
	if err != nil {
		return nil, nil, err
	}
	peak = &sim.Switched{Switches: []sim.Switch{{Decided: first, From: first, Plan: pd}}, End: sched.End, Spans: sched.Spans, Segment: seg.run}
	return sched, peak, nil
}

// rateSegments feeds a replay's segments the trace's rates (sim.Piecewise): every column's
// arrivals are drawn per interval of the trace from the seed and the column, so every plan
// and every cut of the trace sees the same requests.
type rateSegments struct {
	r      *schedule.Rates
	rps    [][]float64 // per column
	seed   uint64
	jitter float64
}

func newRateSegments(r *schedule.Rates, seed uint64, jitter float64) rateSegments {
	f := rateSegments{r: r, rps: make([][]float64, len(r.Targets)), seed: seed, jitter: jitter}
	for c := range r.Targets {
		f.rps[c] = make([]float64, len(r.Rates))
		for i, row := range r.Rates {
			f.rps[c][i] = row[c]
		}
	}
	return f
}

// us is trace time s (seconds) on the replay's clock (µs from the trace's start).
func (f rateSegments) us(s float64) dataplane.Time {
	return dataplane.Time(math.Round((s - f.r.Start) * 1e6))
}

// run is segment k's arrivals over [from, to) on dep, from the engine's time 0.
func (f rateSegments) run(_ int, dep *dataplane.Deployment, from, to dataplane.Time) (*sim.SegmentRun, error) {
	fromS, toS := f.r.Start+float64(from)/1e6, f.r.Start+float64(to)/1e6
	mean := f.r.MeanRates(fromS, toS)
	srcs := make([]sim.Source, len(dep.Apps))
	var expect float64
	for a, x := range dep.Apps {
		col := f.r.Column(x.Name)
		if col < 0 {
			return nil, fmt.Errorf("--trace %s: no column for %q", f.r.Name, x.Name)
		}
		expect += mean[col] * (toS - fromS)
		srcs[a] = sim.NewPiecewise(f.rps[col], dataplane.Time(math.Round(f.r.Step*1e6)), from, to, sim.PointSeed(f.seed, 0, col))
	}
	opts := sim.Options{Duration: to - from, Seed: sim.PointSeed(f.seed, fromS, -1), Jitter: f.jitter,
		ExpectedRequests: int(math.Min(expect*1.1+1024, 1<<22)), CompactEvery: 1 << 16}
	opts.ExpectedAnswers = opts.ExpectedRequests
	opts.NoLatencies = true
	return &sim.SegmentRun{Sources: srcs, Origin: from, Options: opts}, nil
}

func printReport(io *run.IO, s *schedule.Schedule, rep *Report) error {
	if io.JSONOutput() {
		return io.WriteJSON(rep)
	}
	rows := make([][]string, 0, len(rep.Windows)+2)
	for i, w := range rep.Windows {
		sw := ""
		if w.Switched {
			sw = "yes"
		}
		rows = append(rows, []string{fmt.Sprint(i), run.FmtSecs(w.StartS) + "–" + run.FmtSecs(w.EndS), run.FleetShort(s.Windows[i].GPUsUsed),
			sw, fmt.Sprint(w.Requests), fmt.Sprintf("%.2f%%", w.Attainment*100), fmt.Sprintf("%.2f%%", w.PeakAttainment*100)})
	}
	rows = append(rows, []string{"all", run.FmtSecs(rep.Overall.StartS) + "–" + run.FmtSecs(rep.Overall.EndS), "schedule", "",
		fmt.Sprint(rep.Overall.Requests), fmt.Sprintf("%.2f%%", rep.Overall.Attainment*100), fmt.Sprintf("%.2f%%", rep.Peak.Attainment*100)})
	rows = append(rows, []string{"peak", run.FmtSecs(rep.Peak.StartS) + "–" + run.FmtSecs(rep.Peak.EndS), run.FleetShort(s.Peak.GPUsUsed), "",
		fmt.Sprint(rep.Peak.Requests), fmt.Sprintf("%.2f%%", rep.Peak.Attainment*100), ""})
	io.Table([]string{"WINDOW", "SPAN", "GPUS", "SWITCH", "REQUESTS", "ATTAINMENT", "PEAK PLAN"}, rows)
	fmt.Fprintf(io.Out, "\nschedule: cost %.4g %s (switch overlap %.4g) against %.4g for the peak plan all day (%s); attainment %.2f%% against %.2f%% (%.2f%% of the peak plan's)\n",
		rep.Cost, s.Currency, rep.SwitchCost, rep.PeakCost, run.SavingPhrase(s, rep.Saving), rep.Overall.Attainment*100, rep.Peak.Attainment*100, rep.RelAttainment*100)
	return nil
}

// scheduleRequests is the expected number of requests of every column of r over [from, to)
// seconds (the rates' integral), what one replay of the trace generates.
func scheduleRequests(r *schedule.Rates, from, to float64) float64 {
	n := 0.0
	for _, m := range r.MeanRates(from, to) {
		n += m * (to - from)
	}
	return n
}
