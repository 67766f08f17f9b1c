package simulate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/plot/vg"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/base/tables"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/sim"
)

// printSimTable prints the sweep: per load point the attainment, goodput, drops, latency,
// each application's attainment and the utilisation per GPU class, then the LLM table and
// the max load factor.
func printSimTable(io *run.IO, rep *sim.Report) {
	// Utilisation by GPU class (high, low: PPipe's), or by GPU type where the cluster names
	// no class (a column headed "util -" said nothing).
	utilOf := func(p *sim.Point) []sim.Utilization { return p.Classes }
	unclassed := true
	for _, p := range rep.Points {
		for _, c := range p.Classes {
			unclassed = unclassed && c.Name == "-"
		}
	}
	if unclassed {
		utilOf = func(p *sim.Point) []sim.Utilization { return p.GPUTypes }
	}
	classes := map[string]bool{}
	for i := range rep.Points {
		for _, c := range utilOf(&rep.Points[i]) {
			classes[c.Name] = true
		}
	}
	var cls []string
	for c := range classes {
		cls = append(cls, c)
	}
	sort.Strings(cls)
	cancelled := false
	for _, p := range rep.Points {
		cancelled = cancelled || p.Total.Cancelled > 0
	}
	header := []string{"load", "offered/s", "attainment", "goodput/s", "dropped", "late", "p50 ms", "p99 ms"}
	sloP := sloPercentile(rep)
	if sloP > 0 { // the SLO's own percentile (a cascade's p95), where the plan judges at one
		header = append(header, fmt.Sprintf("p%g ms", 100*sloP))
	}
	if cancelled { // the column appears only when clients withdrew requests (--cancel)
		header = slices.Insert(header, 5, "cancelled")
	}
	apps := run.AppNames(rep)
	for _, a := range apps {
		header = append(header, "att "+a)
	}
	for _, c := range cls {
		header = append(header, "util "+c)
	}
	var rows [][]string
	for _, p := range rep.Points {
		row := []string{
			fmt.Sprintf("%.2f", p.Load), fmt.Sprintf("%.1f", p.Total.OfferedRPS), run.Pct(p.Total.Attainment),
			fmt.Sprintf("%.1f", p.Total.GoodputRPS), fmt.Sprint(p.Total.Dropped), fmt.Sprint(p.Total.Late),
			fmt.Sprintf("%.1f", float64(p.Total.Latency.P50Us)/1000), fmt.Sprintf("%.1f", float64(p.Total.Latency.P99Us)/1000),
		}
		if sloP > 0 {
			row = append(row, run.PercentileMs(p.Total.SLOPercentile))
		}
		if cancelled {
			row = slices.Insert(row, 5, fmt.Sprint(p.Total.Cancelled))
		}
		for _, a := range apps {
			v := "-"
			for _, x := range p.Apps {
				if x.Name == a && x.Requests > 0 {
					v = run.Pct(x.Attainment)
				}
			}
			row = append(row, v)
		}
		for _, c := range cls {
			u := "-"
			for _, x := range utilOf(&p) {
				if x.Name == c {
					u = run.Pct(x.Busy)
				}
			}
			row = append(row, u)
		}
		rows = append(rows, row)
	}
	io.Table(header, rows)
	// offered/s is the nominal rate; the seed's arrivals are a draw around it, and goodput
	// counts the on-time completions of the arrivals measured: say so where a draw above the
	// nominal rate puts goodput above offered.
	var above []string
	for _, p := range rep.Points {
		if p.Total.GoodputRPS > p.Total.OfferedRPS {
			above = append(above, fmt.Sprintf("%.2f", p.Load))
		}
	}
	if len(above) > 0 {
		fmt.Fprintf(io.Out, "note: offered/s is the nominal rate (load × the plan's rates) and goodput/s the on-time completions per second of the requests that arrived, a random draw around it: at load %s more arrived than the nominal rate\n", strings.Join(above, ", "))
	}
	why := map[string]string{}
	for _, a := range apps {
		why["att "+a] = "no request of " + a + " measured at that load"
	}
	for _, c := range cls {
		why["util "+c] = "no " + c + " GPU in the deployment at that load"
	}
	tables.DashNote(io.Out, header, rows, why)
	run.PrintLLMTable(io, rep.Points)
	fmt.Fprintf(io.Out, "\n%s\n", maxLoadLine(rep))
	if sloP > 0 {
		fmt.Fprintf(io.Out, "max load factor with the p%g SLO met (%g%% attainment): %.2f\n", 100*sloP, 100*sloP, sim.MaxLoadAt(rep.Points, sloP))
	}
	if line := run.AccuracyLine(rep); line != "" {
		fmt.Fprintln(io.Out, line)
	}
}

// sloPercentile is the percentile every load point's total is judged at (0 = none).
func sloPercentile(rep *sim.Report) float64 {
	p := 0.0
	for _, pt := range rep.Points {
		if pt.Total.SLOPercentile == nil {
			return 0
		}
		p = pt.Total.SLOPercentile.Percentile
	}
	return p
}

// maxLoadLine says which target and window the max load factor used.
func maxLoadLine(rep *sim.Report) string {
	what := fmt.Sprintf("max load factor at %g%% attainment", 100*sim.MaxLoadTarget)
	if rep.WarmupUs > 0 {
		what += ", warm-up " + time.Duration(rep.WarmupUs*int64(time.Microsecond)).String() + " excluded"
	}
	switch {
	case rep.MaxLoad99 <= 0:
		return what + ": none of the simulated loads"
	case rep.Extended && rep.MaxLoad99 >= rep.LimitCap:
		return fmt.Sprintf("%s: %.2f (the sweep's cap: it holds there; the limit is higher)", what, rep.MaxLoad99)
	}
	return fmt.Sprintf("%s: %.2f", what, rep.MaxLoad99)
}

// warnFewRequests warns on stderr about every application that has, at a load point that
// decides the max load factor (one it misses the target at, or the max load itself), too few
// measured requests for the target to mean anything: below 1/(1−target) (100 at 99%) one
// miss already fails it, and 4 requests print 75%. Low loads of a sweep
// that pass with few requests decide nothing and are not warned about.
func warnFewRequests(io *run.IO, rep *sim.Report, remedy string) {
	need := int64(math.Ceil(1/(1-sim.MaxLoadTarget) - 1e-9))
	for a := range rep.BaseRPS {
		fewest, at := int64(-1), 0.0
		for _, p := range rep.Points {
			if a >= len(p.Apps) || (p.Apps[a].Attainment >= sim.MaxLoadTarget && p.Load != rep.MaxLoad99) {
				continue
			}
			if p.Apps[a].Requests > 0 && (fewest < 0 || p.Apps[a].Requests < fewest) {
				fewest, at = p.Apps[a].Requests, p.Load
			}
		}
		if fewest >= 0 && fewest < need {
			fmt.Fprintf(io.Err, "warning: application %q has %d measured requests at load %.2f: too few for a %g%% attainment (at least %d; one miss is %.1f%%): %s\n",
				rep.BaseRPS[a].App, fewest, at, 100*sim.MaxLoadTarget, need, 100/float64(fewest), remedy)
		}
	}
}

func writeSimReport(io *run.IO, cfg *sim.SweepConfig, rep *sim.Report, dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return run.UsageErrorf("--report %s: %v", dir, err)
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := formats.WriteAtomic(filepath.Join(dir, "report.json"), append(data, '\n')); err != nil {
		return err
	}
	p, err := sim.AttainmentPlot(fmt.Sprintf("%s: %s, %s", rep.Plan, rep.Policy, rep.Trace), sim.CurvesOf(rep, ""))
	if err != nil {
		return err
	}
	files, err := sim.SavePlot(p, dir, "attainment", 16*vg.Centimeter, 10*vg.Centimeter)
	if err != nil {
		return err
	}
	// Timeline of the highest passing load (else the lowest load), over a window chosen
	// from its requests (sim.TimelineWindow).
	load := rep.MaxLoad99
	if load == 0 {
		load = rep.Points[0].Load
	}
	s, err := sim.RunForTimeline(cfg, load)
	if err != nil {
		return err
	}
	from, to := sim.TimelineWindow(s.Engine, cfg.Duration)
	tp, err := sim.TimelinePlot(fmt.Sprintf("%s at load %.2f", rep.Plan, load), s.Engine, from, to)
	if err != nil {
		return err
	}
	rows := sim.TimelineRows(cfg.Dep)
	tf, err := sim.SavePlot(tp, dir, "timeline", 24*vg.Centimeter, vg.Length(3+0.45*float64(rows))*vg.Centimeter)
	if err != nil {
		return err
	}
	cdf, err := writeTokenCDFs(cfg, rep, dir, load)
	if err != nil {
		return err
	}
	io.Infof("wrote %s, %s", filepath.Join(dir, "report.json"), strings.Join(append(append(files, tf...), cdf...), ", "))
	return nil
}

// tailSamples is how many measured requests beyond an SLO's percentile a run needs for that
// percentile to mean anything: a p95 estimated from 20 requests is one request (so
// at least 20/(1−p), 400 for a p95).
const tailSamples = 20

// warnFewForPercentile warns on stderr about every application whose SLO is judged at a
// percentile (a cascade's p95) and that has, at some load point, fewer than 20/(1−p)
// measured requests.
func warnFewForPercentile(io *run.IO, rep *sim.Report, remedy string) {
	for a := range rep.BaseRPS {
		fewest, at, p := int64(-1), 0.0, 0.0
		for _, pt := range rep.Points {
			if a >= len(pt.Apps) || pt.Apps[a].SLOPercentile == nil {
				continue
			}
			if n := pt.Apps[a].Requests; fewest < 0 || n < fewest {
				fewest, at, p = n, pt.Load, pt.Apps[a].SLOPercentile.Percentile
			}
		}
		if fewest < 0 || p >= 1 {
			continue
		}
		if need := int64(math.Ceil(tailSamples/(1-p) - run.AbsTol)); fewest < need {
			fmt.Fprintf(io.Err, "warning: application %q has %d measured requests at load %.2f: too few for its p%g SLO (at least %d, %d beyond the percentile): %s\n",
				rep.BaseRPS[a].App, fewest, at, 100*p, need, tailSamples, remedy)
		}
	}
}
