package speedbench

import (
	"bytes"
	"compress/gzip"
	"context"
	"embed"
	"fmt"
	"runtime"
	"time"

	"github.com/plan-dev/plan/bench"
	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/cascade"
	"github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/simbench"
	"github.com/plan-dev/plan/sim/simscale"
)

// data holds gzipped copies of the testdata files the cases are built from (the benchmarks
// read the originals; TestEmbeddedDataMatchesTestdata keeps the copies equal to them):
// testdata/sim/hc1-100.json, testdata/cascade/golden-plan.json,
// testdata/dyorc/workload.json and testdata/serve/wide.json.
//
//go:embed data/*.json.gz
var data embed.FS

// embedded returns the named data file, expanded.
func embedded(name string) ([]byte, error) {
	z, err := data.ReadFile("data/" + name + ".gz")
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, fmt.Errorf("embedded %s: %w", name, err)
	}
	defer zr.Close()
	return formats.ReadAllLimit(zr, formats.MaxFileBytes)
}

// simCase is one sim-POLICY row: its case builder at scale k for a simulated window (0: the
// benchmark's), and the window --quick uses (0: the benchmark's too).
type simCase struct {
	name, policy string
	build        func(k int, dur dataplane.Time) (*simscale.Case, error)
	quickDur     dataplane.Time
}

func simCases() []simCase {
	withData := func(file string, f func([]byte, int, dataplane.Time) (*simscale.Case, error)) func(int, dataplane.Time) (*simscale.Case, error) {
		return func(k int, dur dataplane.Time) (*simscale.Case, error) {
			b, err := embedded(file)
			if err != nil {
				return nil, err
			}
			return f(b, k, dur)
		}
	}
	return []simCase{
		// PPipe at 1,600 GPUs keeps every request of 30 simulated seconds (about 1 GB):
		// --quick simulates 10.
		{"sim-ppipe", "ppipe (busy-until)", withData("hc1-100.json", func(b []byte, k int, d dataplane.Time) (*simscale.Case, error) {
			return simscale.PPipe(b, simscale.ModeBusyUntil, k, d)
		}), 10 * dataplane.Second},
		{"sim-pard", "pard", func(k int, d dataplane.Time) (*simscale.Case, error) { return simscale.PARD("pard", k, d) }, 0},
		{"sim-qlm", qlm.PolicyQLM, func(k int, d dataplane.Time) (*simscale.Case, error) { return simscale.QLM(qlm.PolicyQLM, k, d) }, 0},
		{"sim-cascadeserve", cascade.PolicyGears, withData("golden-plan.json", func(b []byte, k int, d dataplane.Time) (*simscale.Case, error) {
			return simscale.Cascade(b, cascade.PolicyGears, k, d)
		}), 0},
		{"sim-cocktail", cascade.PolicyCocktail, withData("golden-plan.json", func(b []byte, k int, d dataplane.Time) (*simscale.Case, error) {
			return simscale.Cascade(b, cascade.PolicyCocktail, k, d)
		}), 0},
		{"sim-dyorc", "dyorc", withData("workload.json", func(b []byte, k int, d dataplane.Time) (*simscale.Case, error) {
			return simscale.DyOrc(b, "dyorc", k, d)
		}), 0},
	}
}

func simMeasures() []measure {
	var ms []measure
	for _, c := range simCases() {
		ms = append(ms, measure{name: c.name, group: "sim", run: func(ctx context.Context, o *Command, env bench.Env) (Row, error) {
			return runSim(ctx, o, env, c)
		}})
	}
	return ms
}

// simSide accumulates one scale's runs: events and the CPU time of the runs alone.
type simSide struct {
	c      *simscale.Case
	events int64
	cpu    time.Duration
	runs   int
}

// run simulates the side's case once, after a collection so that the previous run's
// garbage is not charged to it.
func (s *simSide) run() error {
	runtime.GC()
	cpu0 := simbench.CPUTime()
	sm, err := s.c.Run()
	if err != nil {
		return err
	}
	s.cpu += simbench.CPUTime() - cpu0
	s.events += sm.Engine.Events()
	s.runs++
	runtime.KeepAlive(sm)
	return nil
}

func (s *simSide) rate() float64 { return float64(s.events) / s.cpu.Seconds() }

// runSim alternates runs of the 1× and the k× case until each has run minRuns times and
// used minCPU, so that both see the same machine, and compares their events per CPU-second.
func runSim(ctx context.Context, o *Command, env bench.Env, c simCase) (Row, error) {
	var dur dataplane.Time
	minRuns, minCPU := 3, 2*time.Second
	if o.quick {
		dur, minRuns, minCPU = c.quickDur, 1, 250*time.Millisecond
	}
	one, err := c.build(1, dur)
	if err != nil {
		return Row{}, err
	}
	big, err := c.build(o.scale, dur)
	if err != nil {
		return Row{}, err
	}
	sides := []*simSide{{c: one}, {c: big}}
	for sides[0].runs < minRuns || sides[1].runs < minRuns || sides[0].cpu < minCPU || sides[1].cpu < minCPU {
		if err := ctx.Err(); err != nil {
			return Row{}, err
		}
		for _, s := range sides {
			if s.runs < minRuns || s.cpu < minCPU {
				if err := s.run(); err != nil {
					return Row{}, fmt.Errorf("%s: %w", s.c.Name(c.policy), err)
				}
			}
		}
		env.Progressf("bench speed: %s: %d and %d runs", c.name, sides[0].runs, sides[1].runs)
	}
	note := fmt.Sprintf("%s at %d against %d %s; %d and %d runs; CPU time of the runs, GC included",
		c.policy, big.Units, one.Units, one.Unit, sides[1].runs, sides[0].runs)
	return row(c.name, "events/CPU-s", fmt.Sprintf("(1×, %d %s)", one.Units, one.Unit), sides[1].rate(), sides[0].rate(),
		target{atLeast: true, bound: 0.9}, note), nil
}
