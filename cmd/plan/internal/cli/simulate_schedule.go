package cli

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"

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

// scheduleReport is `plan simulate SCHEDULE --trace day.csv`'s result (issue 34 item 4).
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
	// RelAttainment = Overall.Attainment / Peak.Attainment (the target: ≥ 0.99).
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

func (w *windowResult) add(m *sim.Metrics) {
	w.Requests += m.Total.Requests
	w.OnTime += int64(math.Round(m.Total.Attainment * float64(m.Total.Requests)))
}

func (w *windowResult) done() {
	w.Attainment = 1
	if w.Requests > 0 {
		w.Attainment = math.Round(float64(w.OnTime)/float64(w.Requests)*1e6) / 1e6
	}
}

// segment is a span of the trace served by one plan: a window's own plan, or the previous
// window's for the first switch-delay of a window whose plan changed.
type segment struct {
	window   int
	peak     bool // served by the peak plan (the baseline), not the schedule
	plan     *deployed
	from, to float64 // seconds of trace time
}

type deployed struct {
	dep *dataplane.Deployment
	pol string
}

// simulateSchedule runs `plan simulate` on a schedule when path is one (true), after checking
// that no flag given belongs to the other kind of argument.
func simulateSchedule(cmd *cobra.Command, app *App, o *simulateOptions, path string) (bool, error) {
	// Only a regular file is read here: a FIFO or a device would block, and the plan loader
	// names those as bad input.
	var data []byte
	st, err := os.Stat(path)
	if err == nil && st.Mode().IsRegular() {
		data, err = os.ReadFile(path)
	}
	isSched := err == nil && schedule.IsSchedule(data)
	if err := scheduleFlags(cmd, path, isSched); err != nil || !isSched {
		return isSched, err
	}
	return true, runSimulateSchedule(cmd, app, o, path, data)
}

// runSimulateSchedule replays a schedule against the rate trace it was solved for: each
// window served by its plan, after a switch delay during which the previous plan serves, and
// the peak plan over every window too, each segment simulated from empty queues (a segment's
// requests still in flight at its end finish on its plan: drain on switch).
func runSimulateSchedule(cmd *cobra.Command, app *App, o *simulateOptions, path string, data []byte) error {
	switchDelay := o.switchDelay
	if switchDelay < 0 {
		return usageErrorf("--switch-delay %s: must be ≥ 0", switchDelay)
	}
	if cmd.Flags().Changed("report") || o.report != "" { // the output rule of every command
		if err := formats.CheckOutputDir(o.report); err != nil {
			return usageErrorf("--report: %q: %v", o.report, err)
		}
	}
	s, err := schedule.Decode(path, data)
	if err != nil {
		return usageError(err)
	}
	if o.trace == "" || o.trace == "poisson" {
		return usageErrorf("%s: a schedule replays a rate trace: give --trace day.csv (the trace it was solved for)", path)
	}
	rates, err := schedule.ReadRatesFile(o.trace)
	if err != nil {
		return usageError(err)
	}
	if end := rates.Start + rates.Span(); s.Windows[len(s.Windows)-1].EndS > end+1e-6 {
		return usageErrorf("--trace %s: ends at %gs, before the schedule %s's last window (%gs)", o.trace, end, path, s.Windows[len(s.Windows)-1].EndS)
	}
	params, err := parseParams(o.params)
	if err != nil {
		return err
	}
	pcfg := dataplane.Config{Policy: o.policy, Params: params}
	cache := map[string]*deployed{}
	deploy := func(i int, raw []byte) (*deployed, error) {
		if d, ok := cache[string(raw)]; ok {
			return d, nil
		}
		name := fmt.Sprintf("%s: windows[%d].plan", path, i)
		if i < 0 {
			name = path + ": peak.plan"
		}
		doc, err := formats.DecodeWith(name, raw, app.Systems.Sections())
		if err != nil {
			return nil, usageError(err)
		}
		plan, ok := doc.(*formats.Plan)
		if !ok {
			return nil, usageErrorf("%s: not a plan", name)
		}
		dep, pol, err := app.Systems.Deploy(plan)
		if err != nil {
			return nil, usageErrorf("%s: %v", name, err)
		}
		for _, a := range dep.Apps {
			if rates.Column(a.Name) < 0 {
				return nil, usageErrorf("--trace %s: no column for %q, which %s serves", o.trace, a.Name, name)
			}
		}
		// A policy that cannot serve a plan is bad input, found before any simulation.
		if _, err := app.Systems.Policies().New(dep, pcfg, pol); err != nil {
			return nil, usageErrorf("--policy: %s: %v", name, err)
		}
		d := &deployed{dep: dep, pol: pol}
		cache[string(raw)] = d
		return d, nil
	}
	rep := &scheduleReport{Schedule: path, Trace: o.trace, SwitchS: switchDelay.Seconds(), Ahead: o.switchAhead}
	segs, err := scheduleSegments(s, rep, o, deploy)
	if err != nil {
		return err
	}
	ms := make([]*sim.Metrics, len(segs))
	app.Infof("simulate: %d windows of %s and the peak plan at the rates of %s", len(s.Windows), path, o.trace)
	run := func(k int) error {
		sg := segs[k]
		m, err := runSegment(app, o, pcfg, rates, sg)
		if err != nil {
			return fmt.Errorf("%s: segment %g–%gs: %w", path, sg.from, sg.to, err)
		}
		ms[k] = m
		return nil
	}
	errs, err := sim.Parallel(cmd.Context(), len(segs), o.parallel, run, nil)
	if err != nil {
		return err
	}
	for _, e := range errs {
		if e != nil {
			return checkFailed(e)
		}
	}
	peakWin := make([]windowResult, len(rep.Windows))
	for k, sg := range segs {
		if sg.peak {
			rep.Peak.add(ms[k])
			peakWin[sg.window].add(ms[k])
			continue
		}
		rep.Windows[sg.window].add(ms[k])
		rep.Overall.add(ms[k])
	}
	for i := range rep.Windows {
		rep.Windows[i].done()
		peakWin[i].done()
		rep.Windows[i].PeakAttainment = peakWin[i].Attainment
	}
	rep.Overall.done()
	rep.Peak.done()
	rep.Overall.StartS, rep.Overall.EndS = s.Windows[0].StartS, s.Windows[len(s.Windows)-1].EndS
	rep.Peak.StartS, rep.Peak.EndS = s.Peak.StartS, s.Peak.EndS
	rep.SwitchCost = round6(rep.SwitchCost)
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
			err = usageErrorf("--%s: does not apply to the schedule %s (it takes --%s)", f.Name, path, strings.Join(append(slices.Clone(scheduleToo), scheduleOnly...), ", --"))
		case !isSchedule && only:
			err = usageErrorf("--%s: applies to a schedule (plan solve --trace --window), not to the plan %s", f.Name, path)
		}
	})
	return err
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// scheduleSegments cuts the schedule into the segments each plan serves (a window's own plan;
// the previous one over a reactive switch's delay; the peak plan over every window), adding
// each window and the switches' overlap cost to rep.
func scheduleSegments(s *schedule.Schedule, rep *scheduleReport, o *simulateOptions, deploy func(int, []byte) (*deployed, error)) ([]segment, error) {
	switchDelay := o.switchDelay
	var segs []segment
	var prev *deployed
	for i, e := range s.Windows {
		d, err := deploy(i, e.Plan)
		if err != nil {
			return nil, err
		}
		wr := windowResult{StartS: e.StartS, EndS: e.EndS}
		from := e.StartS
		switch {
		case prev == nil || prev == d:
		case switchDelay == 0: // an instant switch
			wr.Switched = true
		case o.switchAhead: // the new fleet loads during the previous window's last delay
			wr.Switched = true
			rep.SwitchCost += e.CostPerHour * math.Min(switchDelay.Seconds(), s.Windows[i-1].EndS-s.Windows[i-1].StartS) / 3600
		default:
			cut := math.Min(e.EndS, e.StartS+switchDelay.Seconds())
			segs = append(segs, segment{window: i, plan: prev, from: from, to: cut})
			rep.SwitchCost += s.Windows[i-1].CostPerHour * (cut - from) / 3600
			wr.Switched, from = true, cut
		}
		if from < e.EndS {
			segs = append(segs, segment{window: i, plan: d, from: from, to: e.EndS})
		}
		rep.Windows = append(rep.Windows, wr)
		prev = d
	}
	pd, err := deploy(-1, s.Peak.Plan)
	if err != nil {
		return nil, err
	}
	// The peak plan is cut at the same edges (never switching), so both sides start from empty
	// queues equally often and the windows simulate in parallel.
	for i, e := range s.Windows {
		segs = append(segs, segment{window: i, peak: true, plan: pd, from: e.StartS, to: e.EndS})
	}
	return segs, nil
}

// runSegment simulates one segment: its plan's policy fed by the trace's rates over it.
func runSegment(app *App, o *simulateOptions, pcfg dataplane.Config, r *schedule.Rates, sg segment) (*sim.Metrics, error) {
	pol, err := app.Systems.Policies().New(sg.plan.dep, pcfg, sg.plan.pol)
	if err != nil {
		return nil, err
	}
	us := func(s float64) dataplane.Time { return dataplane.Time(math.Round((s - r.Start) * 1e6)) }
	srcs := make([]sim.Source, len(sg.plan.dep.Apps))
	var expect float64
	for a, ap := range sg.plan.dep.Apps {
		col := r.Column(ap.Name)
		rps := make([]float64, len(r.Rates))
		for i, row := range r.Rates {
			rps[i] = row[col]
		}
		expect += r.MeanRates(sg.from, sg.to)[col] * (sg.to - sg.from)
		srcs[a] = sim.NewPiecewise(rps, dataplane.Time(math.Round(r.Step*1e6)), us(sg.from), us(sg.to), sim.PointSeed(o.seed, sg.from, a))
	}
	opts := sim.Options{Duration: us(sg.to) - us(sg.from), Seed: sim.PointSeed(o.seed, sg.from, -1), Jitter: o.jitter,
		ExpectedRequests: int(math.Min(expect*1.1+1024, 1<<22)), CompactEvery: 1 << 16}
	opts.ExpectedAnswers = opts.ExpectedRequests
	opts.NoLatencies = true
	sm, err := sim.New(sg.plan.dep, pol, srcs, opts)
	if err != nil {
		return nil, err
	}
	return sm.Run()
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
		rows = append(rows, []string{fmt.Sprint(i), fmtSecs(w.StartS) + "–" + fmtSecs(w.EndS), fleetShort(s.Windows[i].GPUsUsed),
			sw, fmt.Sprint(w.Requests), fmt.Sprintf("%.2f%%", w.Attainment*100), fmt.Sprintf("%.2f%%", w.PeakAttainment*100)})
	}
	rows = append(rows, []string{"all", fmtSecs(rep.Overall.StartS) + "–" + fmtSecs(rep.Overall.EndS), "schedule", "",
		fmt.Sprint(rep.Overall.Requests), fmt.Sprintf("%.2f%%", rep.Overall.Attainment*100), fmt.Sprintf("%.2f%%", rep.Peak.Attainment*100)})
	rows = append(rows, []string{"peak", fmtSecs(rep.Peak.StartS) + "–" + fmtSecs(rep.Peak.EndS), fleetShort(s.Peak.GPUsUsed), "",
		fmt.Sprint(rep.Peak.Requests), fmt.Sprintf("%.2f%%", rep.Peak.Attainment*100), ""})
	app.Table([]string{"WINDOW", "SPAN", "GPUS", "SWITCH", "REQUESTS", "ATTAINMENT", "PEAK PLAN"}, rows)
	fmt.Fprintf(app.Out, "\nschedule: cost %.4g %s (switch overlap %.4g) against %.4g for the peak plan all day: saving %.1f%%; attainment %.2f%% against %.2f%% (%.2f%% of the peak plan's)\n",
		rep.Cost, s.Currency, rep.SwitchCost, rep.PeakCost, rep.Saving*100, rep.Overall.Attainment*100, rep.Peak.Attainment*100, rep.RelAttainment*100)
	return nil
}
