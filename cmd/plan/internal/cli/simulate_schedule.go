package cli

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	progressline "github.com/plan-dev/plan/internal/progress"
	"github.com/plan-dev/plan/internal/run"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/planner/schedule"
	"github.com/plan-dev/plan/sim"
)

// defaultSwitchDelay is how long a window's new plan takes before it can serve: its GPUs are
// provisioned and its models loaded while the previous window's plan keeps serving (make
// before break; the overlap is paid for both fleets). 60 s covers a cloud GPU instance
// already booted loading a few GB of weights from local disk; a cold VM takes longer
// (--switch-delay). A schedule is known ahead, so by default (--switch-ahead) the load
// starts one delay before the window's edge and the new plan serves from the edge; with
// --switch-ahead=false the load starts at the edge and the previous plan serves the
// window's first delay (a reactive switch).
const defaultSwitchDelay = time.Minute

// scheduleReport is `plan simulate SCHEDULE --trace day.csv`'s result.
type scheduleReport struct {
	Schedule string         `json:"schedule"`
	Trace    string         `json:"trace"`
	SwitchS  float64        `json:"switch_delay_s"`
	Ahead    bool           `json:"switch_ahead"`
	Windows  []windowResult `json:"windows"`
	// Schedule is every window together (switch segments included); Peak the peak plan all day.
	Overall windowResult `json:"overall"`
	Peak    windowResult `json:"peak"`
	// Cost is the schedule's cost plus the overlap of the switches (the old fleet kept
	// while the new one loads); PeakCost the peak plan's all day.
	Cost       float64 `json:"cost"`
	SwitchCost float64 `json:"switch_cost"`
	PeakCost   float64 `json:"peak_cost"`
	Saving     float64 `json:"saving"`
	// RelAttainment = Overall.Attainment / Peak.Attainment (BenchmarkDaySchedule's target: ≥ 0.99).
	RelAttainment float64 `json:"relative_attainment"`
}

type windowResult struct {
	StartS     float64 `json:"start_s"`
	EndS       float64 `json:"end_s"`
	Switched   bool    `json:"switched,omitempty"`
	Requests   int64   `json:"requests"`
	OnTime     int64   `json:"on_time"`
	Attainment float64 `json:"attainment"`
	// PeakAttainment is the peak plan's over the same window (windows only).
	PeakAttainment float64 `json:"peak_attainment,omitempty"`
}

func (w *windowResult) add(c sim.SpanCount) {
	w.Requests += c.Requests
	w.OnTime += c.Met
}

func (w *windowResult) done() {
	w.Attainment = 1
	if w.Requests > 0 {
		w.Attainment = math.Round(float64(w.OnTime)/float64(w.Requests)*1e6) / 1e6
	}
}

// runSimulateSchedule replays a schedule against the rate trace it was solved for, through
// the switched replay `plan simulate --autopilot` runs too (sim.Switched): each window's
// plan switched in at its edge (loaded ahead, or after a reactive switch's delay, the
// previous plan serving meanwhile), and the peak plan over the whole trace. A plan keeps its
// queues while it serves (windows keeping their plan are not cut); a switched-to plan starts
// from empty queues, as a freshly loaded placement does, while the requests the old plan
// admitted drain on it (drain on switch). Both replays see the same arrivals.
func runSimulateSchedule(cmd *cobra.Command, app *App, o *simulateOptions, path string, data []byte) error {
	switchDelay := o.switchDelay
	if switchDelay < 0 {
		return run.UsageErrorf("--switch-delay %s: must be ≥ 0", switchDelay)
	}
	if cmd.Flags().Changed("report") || o.report != "" { // the output rule of every command
		if err := formats.CheckOutputDir(o.report); err != nil {
			return run.UsageErrorf("--report: %q: %v", o.report, err)
		}
	}
	s, err := schedule.Decode(path, data)
	if err != nil {
		return run.UsageError(err)
	}
	if o.trace == "" || o.trace == "poisson" {
		return run.UsageErrorf("%s: a schedule replays a rate trace: give --trace day.csv (the trace it was solved for)", path)
	}
	rates, err := schedule.ReadRatesFile(o.trace)
	if err != nil {
		return run.UsageError(err)
	}
	// A schedule's plans are sized for the rates of the trace it was solved on: another
	// trace would judge them on rates they were never meant for.
	d, err := schedule.TraceDigestOf(o.trace)
	if err != nil {
		return run.UsageError(err)
	}
	switch {
	case s.TraceDigest == "":
		fmt.Fprintf(app.Err, "warning: %s: records no trace digest (written before schedules did): cannot tell whether --trace %s is the trace it was solved for (%s)\n", path, o.trace, s.Trace)
	case s.TraceDigest != d:
		return run.UsageErrorf("--trace %s: %s, but the schedule %s was solved for a trace of %s (%s): replay it on that trace, or solve a schedule for this one",
			o.trace, d, path, s.TraceDigest, s.Trace)
	}
	if end := rates.Start + rates.Span(); s.Windows[len(s.Windows)-1].EndS > end+1e-6 {
		return run.UsageErrorf("--trace %s: ends at %gs, before the schedule %s's last window (%gs)", o.trace, end, path, s.Windows[len(s.Windows)-1].EndS)
	}
	// Each replay (the schedule's, the peak plan's) holds every request of the trace's
	// windows: the sweep's per-point cap (checkSimulationSize) on the trace's request count.
	if n := scheduleRequests(rates, s.Windows[0].StartS, s.Windows[len(s.Windows)-1].EndS); n > run.MaxRequestsPerPoint {
		return run.UsageErrorf("--trace %s: %.3g requests over the schedule %s's windows: more than %d in one replay; replay a shorter trace",
			o.trace, n, path, run.MaxRequestsPerPoint)
	}
	params, err := run.ParseParams(o.params)
	if err != nil {
		return err
	}
	pcfg := dataplane.Config{Policy: o.policy, Params: params}
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
		doc, err := formats.DecodeWith(name, raw, app.Systems.Sections())
		if err != nil {
			return nil, run.UsageError(err)
		}
		plan, ok := doc.(*formats.Plan)
		if !ok {
			return nil, run.UsageErrorf("%s: not a plan", name)
		}
		dep, pol, err := app.Systems.Deploy(plan)
		if err != nil {
			return nil, run.UsageErrorf("%s: %v", name, err)
		}
		for _, a := range dep.Apps {
			if rates.Column(a.Name) < 0 {
				return nil, run.UsageErrorf("--trace %s: no column for %q, which %s serves", o.trace, a.Name, name)
			}
		}
		// A policy that cannot serve a plan is bad input, found before any simulation.
		if _, err := app.Systems.Policies().New(dep, pcfg, pol); err != nil {
			return nil, run.UsageErrorf("--policy: %s: %v", name, err)
		}
		d := &sim.SwitchPlan{Name: name, CostPerHour: costPerHour, Deploy: func() (*dataplane.Deployment, dataplane.Policy, error) {
			p, err := app.Systems.Policies().New(dep, pcfg, pol)
			return dep, p, err
		}}
		cache[string(raw)] = d
		return d, nil
	}
	rep := &scheduleReport{Schedule: path, Trace: o.trace, SwitchS: switchDelay.Seconds(), Ahead: o.switchAhead}
	sched, peak, err := scheduleReplays(s, rep, o, deploy, newRateSegments(rates, o))
	if err != nil {
		return err
	}
	app.Infof("simulate: %d windows of %s and the peak plan at the rates of %s", len(s.Windows), path, o.trace)
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	// The line shows before the first segment ends; its total comes with the first step.
	task := progressline.NewTask(app.Err, app.Quiet, "simulate", "plan segments (schedule and peak plan)", 0)
	res, err := sim.RunSwitchedWith(ctx, o.parallel, func(done, total int) {
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
	if o.report != "" {
		if err := writeScheduleReport(app, o.report, s, rep); err != nil {
			return err
		}
	}
	return printScheduleReport(app, s, rep)
}

// scheduleOnly are simulate's flags for a schedule alone; scheduleToo those that apply to a
// schedule as to a plan (the rest sweep load factors of one plan).
var (
	scheduleOnly = []string{"switch-delay", "switch-ahead"}
	scheduleToo  = []string{"trace", "seed", "policy", "param", "jitter", "parallel", "report"}
)

// scheduleFlags rejects a flag given that does not apply to the argument: a load sweep's
// flag with a schedule, a schedule's with a plan.
func scheduleFlags(cmd *cobra.Command, path string, isSchedule bool) error {
	var err error
	fl, inherited := cmd.Flags(), cmd.InheritedFlags()
	fl.Visit(func(f *pflag.Flag) {
		only := slices.Contains(scheduleOnly, f.Name)
		switch {
		case err != nil:
		case isSchedule && !only && !slices.Contains(scheduleToo, f.Name) && inherited.Lookup(f.Name) == nil:
			err = run.UsageErrorf("--%s: does not apply to the schedule %s (it takes --%s)", f.Name, path, strings.Join(append(slices.Clone(scheduleToo), scheduleOnly...), ", --"))
		case !isSchedule && only:
			err = run.UsageErrorf("--%s: applies to a schedule (plan solve --trace --window), not to the plan %s", f.Name, path)
		}
	})
	return err
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// scheduleReplays builds the two replays of a schedule: its windows' plans switched in at
// the windows' edges, and the peak plan all along, both reporting each window. A window
// whose plan differs from the previous one's is a switch: decided one --switch-delay
// before its edge and serving from it (loaded ahead), or decided at the edge and serving
// once loaded (reactive; the previous plan serves meanwhile); the new fleet is held from
// the decision.
func scheduleReplays(s *schedule.Schedule, rep *scheduleReport, o *simulateOptions, deploy func(int, []byte, float64) (*sim.SwitchPlan, error), seg rateSegments) (sched, peak *sim.Switched, err error) {
	delay := run.Us(o.switchDelay)
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
		wr := windowResult{StartS: e.StartS, EndS: e.EndS}
		switch {
		case prev == nil:
			sched.Switches = append(sched.Switches, sim.Switch{Decided: edge, From: edge, Plan: d})
		case prev == d:
		case o.switchAhead:
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
	r    *schedule.Rates
	rps  [][]float64 // per column
	seed uint64
	o    *simulateOptions
}

func newRateSegments(r *schedule.Rates, o *simulateOptions) rateSegments {
	f := rateSegments{r: r, rps: make([][]float64, len(r.Targets)), seed: o.seed, o: o}
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
	opts := sim.Options{Duration: to - from, Seed: sim.PointSeed(f.seed, fromS, -1), Jitter: f.o.jitter,
		ExpectedRequests: int(math.Min(expect*1.1+1024, 1<<22)), CompactEvery: 1 << 16}
	opts.ExpectedAnswers = opts.ExpectedRequests
	opts.NoLatencies = true
	return &sim.SegmentRun{Sources: srcs, Origin: from, Options: opts}, nil
}

func printScheduleReport(app *App, s *schedule.Schedule, rep *scheduleReport) error {
	if app.JSONOutput() {
		return app.WriteJSON(rep)
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
	app.Table([]string{"WINDOW", "SPAN", "GPUS", "SWITCH", "REQUESTS", "ATTAINMENT", "PEAK PLAN"}, rows)
	fmt.Fprintf(app.Out, "\nschedule: cost %.4g %s (switch overlap %.4g) against %.4g for the peak plan all day (%s); attainment %.2f%% against %.2f%% (%.2f%% of the peak plan's)\n",
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
