package schedule

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/planner/schedule"
	"github.com/plan-dev/plan/sim"
)

// writeReport writes a schedule replay's --report DIR: schedule-report.json, the cost
// per hour of every window beside the peak plan's (cost.png/svg: the day's saving as an
// area) and the attainment of every window on its plan and on the peak plan
// (attainment.png/svg).
func writeReport(io *run.IO, dir string, s *schedule.Schedule, rep *Report) error {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return run.UsageErrorf("--report %s: %v", dir, err)
	}
	data, err := formats.Marshal(rep)
	if err != nil {
		return err
	}
	if err := formats.WriteAtomic(filepath.Join(dir, "schedule-report.json"), data); err != nil {
		return err
	}
	// Step lines: each window's value at its start and end.
	step := func(name string, val func(i int) float64) sim.Curve {
		c := sim.Curve{Name: name}
		for i, w := range rep.Windows {
			c.Loads = append(c.Loads, w.StartS/3600, w.EndS/3600)
			c.Values = append(c.Values, val(i), val(i))
		}
		return c
	}
	cost, err := sim.CostPlot("cost per hour: a plan per window against the peak plan all day", "hour", s.Currency, []sim.Curve{
		step("schedule", func(i int) float64 { return s.Windows[i].CostPerHour }),
		step("peak plan", func(int) float64 { return s.Peak.CostPerHour }),
	})
	if err != nil {
		return err
	}
	att, err := sim.AttainmentPlot("SLO attainment per window", []sim.Curve{
		step("schedule", func(i int) float64 { return rep.Windows[i].Attainment }),
		step("peak plan", func(i int) float64 { return rep.Windows[i].PeakAttainment }),
	})
	if err != nil {
		return err
	}
	att.X.Label.Text = "hour"
	paths := []string{filepath.Join(dir, "schedule-report.json")}
	for _, pl := range []struct {
		base string
		p    *plot.Plot
	}{{"cost", cost}, {"attainment", att}} {
		ps, err := sim.SavePlot(pl.p, dir, pl.base, 8*vg.Inch, 4*vg.Inch)
		if err != nil {
			return err
		}
		paths = append(paths, ps...)
	}
	for _, p := range paths {
		io.Infof("wrote %s", p)
	}
	return nil
}
