package speedbench

import (
	"bytes"
	"compress/gzip"
	"context"
	"embed"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/cascade"
	"github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/base/simbench"
	"github.com/plan-dev/plan/internal/onformats/benchapi"
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
// benchmark's), reading its bundled inputs with the registry's sections (benchapi.Env.Sections),
// and the window --quick uses (0: the benchmark's too).
type simCase struct {
	name, policy string
	build        func(secs *formats.SectionSet, k int, dur dataplane.Time) (*simscale.Case, error)
	quickDur     dataplane.Time
}

func simCases() []simCase {
	type build = func(*formats.SectionSet, int, dataplane.Time) (*simscale.Case, error)
	withData := func(file string, f func(*formats.SectionSet, []byte, int, dataplane.Time) (*simscale.Case, error)) build {
		return func(secs *formats.SectionSet, k int, dur dataplane.Time) (*simscale.Case, error) {
			b, err := embedded(file)
			if err != nil {
				return nil, err
			}
			return f(secs, b, k, dur)
		}
	}
	return []simCase{
		// PPipe at 1,600 GPUs keeps every request of 30 simulated seconds (about 1 GB):
		// --quick simulates 10.
		{"sim-ppipe", "ppipe (busy-until)", withData("hc1-100.json", func(secs *formats.SectionSet, b []byte, k int, d dataplane.Time) (*simscale.Case, error) {
			return simscale.PPipe(secs, b, simscale.ModeBusyUntil, k, d)
		}), 10 * dataplane.Second},
		{"sim-pard", "pard", func(_ *formats.SectionSet, k int, d dataplane.Time) (*simscale.Case, error) {
			return simscale.PARD("pard", k, d)
		}, 0},
		{"sim-qlm", qlm.PolicyQLM, func(_ *formats.SectionSet, k int, d dataplane.Time) (*simscale.Case, error) {
			return simscale.QLM(qlm.PolicyQLM, k, d)
		}, 0},
		{"sim-cascadeserve", cascade.PolicyGears, withData("golden-plan.json", func(secs *formats.SectionSet, b []byte, k int, d dataplane.Time) (*simscale.Case, error) {
			return simscale.Cascade(secs, b, cascade.PolicyGears, k, d)
		}), 0},
		{"sim-cocktail", cascade.PolicyCocktail, withData("golden-plan.json", func(secs *formats.SectionSet, b []byte, k int, d dataplane.Time) (*simscale.Case, error) {
			return simscale.Cascade(secs, b, cascade.PolicyCocktail, k, d)
		}), 0},
		{"sim-dyorc", "dyorc", withData("workload.json", func(secs *formats.SectionSet, b []byte, k int, d dataplane.Time) (*simscale.Case, error) {
			return simscale.DyOrc(secs, b, "dyorc", k, d)
		}), 0},
	}
}

func simMeasures() []measure {
	var ms []measure
	for _, c := range simCases() {
		ms = append(ms, measure{name: c.name, group: "sim", run: func(ctx context.Context, o *Command, env benchapi.Env) (Row, error) {
			return runSim(ctx, o, env, c)
		}})
	}
	return ms
}

// simSide accumulates one scale's runs: events, the CPU time of the runs alone, and the
// bytes they allocated.
type simSide struct {
	c      *simscale.Case
	events int64
	cpu    time.Duration
	bytes  uint64
	cycles uint64 // collections during the runs (only under the memory limit)
	runs   int
}

// simMemoryLimit bounds the heap while a run holds the collector off: a run that would grow
// past it is collected (and the row's note says so) rather than exhausting the machine.
const simMemoryLimit = 6 << 30

// run simulates the side's case once, after a collection, with the collector held off for
// the run's duration. The ratio is then the simulator's own cost, memory traffic included,
// in one regime on both sides. With the collector on, a run's figure depends on where its
// allocation falls against the runtime's pacing: a 1× run that allocates under the 4 MB
// minimum heap goal never collects, while one beside a smaller live heap collects on
// every run. The same code measured 0.70–0.98 (sim-dyorc) and 0.78–1.73 (sim-qlm) across
// the regimes (bench/RESULTS.md). The collector's share of a run grows with the bytes it
// allocates, so the row's note gives those per event for both sides instead.
func (s *simSide) run() error {
	runtime.GC()
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(simMemoryLimit))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	before := readAllocs()
	cpu0 := simbench.CPUTime()
	sm, err := s.c.Run()
	if err != nil {
		return err
	}
	s.cpu += simbench.CPUTime() - cpu0
	after := readAllocs()
	s.bytes += after.bytes - before.bytes
	s.cycles += after.cycles - before.cycles
	s.events += sm.Engine.Events()
	s.runs++
	runtime.KeepAlive(sm)
	return nil
}

// allocs is the runtime's cumulative allocation and collection counts.
type allocs struct{ bytes, cycles uint64 }

func readAllocs() allocs {
	ms := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(ms)
	return allocs{bytes: ms[0].Value.Uint64(), cycles: ms[1].Value.Uint64()}
}

// bytesPerEvent is the side's allocation per simulated event.
func (s *simSide) bytesPerEvent() float64 { return float64(s.bytes) / float64(max(s.events, 1)) }

func (s *simSide) rate() float64 { return float64(s.events) / s.cpu.Seconds() }

// runSim compares the events per CPU-second of the 1× and the k× case over rounds: each
// round runs the k× case once between two halves of as many 1× runs as take about as long
// (from the untimed first runs), so that both sides sample the same stretches of the
// machine. On a 2-core VM the machine's speed moves between levels ~1.5× apart for seconds
// at a time; with one k× run per pass of a loop that ran the 1× case once too, the 1× side
// went on alone once the k× side had its runs, and sim-dyorc read 0.68–0.93 on one binary
// (bench/RESULTS.md). Rounds go on until each side has used minCPU and there are minRuns.
func runSim(ctx context.Context, o *Command, env benchapi.Env, c simCase) (Row, error) {
	var dur dataplane.Time
	minRuns, minCPU := 3, 2*time.Second
	if o.quick {
		dur, minRuns, minCPU = c.quickDur, 1, 250*time.Millisecond
	}
	one, err := c.build(env.Sections, 1, dur)
	if err != nil {
		return Row{}, err
	}
	big, err := c.build(env.Sections, o.scale, dur)
	if err != nil {
		return Row{}, err
	}
	sides := []*simSide{{c: one}, {c: big}}
	// One untimed run each first: the heap grows to the run's size and its pages are
	// faulted in there, not in the first timed run (with the collector off, a first run
	// at 16× paid ~10% more in page faults). Their CPU times size the rounds.
	var warm [2]time.Duration
	for i, s := range sides {
		if err := s.run(); err != nil {
			return Row{}, fmt.Errorf("%s: %w", s.c.Name(c.policy), err)
		}
		warm[i] = s.cpu
		*s = simSide{c: s.c}
	}
	perRound := balancedRuns(warm[1], warm[0])
	rounds := 0
	for rounds < minRuns || sides[0].cpu < minCPU || sides[1].cpu < minCPU {
		if err := ctx.Err(); err != nil {
			return Row{}, err
		}
		for i := 0; i < perRound; i++ {
			if i == perRound/2 {
				if err := sides[1].run(); err != nil {
					return Row{}, fmt.Errorf("%s: %w", big.Name(c.policy), err)
				}
			}
			if err := sides[0].run(); err != nil {
				return Row{}, fmt.Errorf("%s: %w", one.Name(c.policy), err)
			}
		}
		rounds++
		env.Progressf("bench speed: %s: %d and %d runs", c.name, sides[0].runs, sides[1].runs)
	}
	note := fmt.Sprintf("%s at %d against %d %s; %d and %d runs in %d rounds (each k× run between the 1× runs of about its CPU time); CPU time of the runs, collector held off; allocated %.0f B/event at %d, %.0f at %d",
		c.policy, big.Units, one.Units, one.Unit, sides[1].runs, sides[0].runs, rounds, sides[1].bytesPerEvent(), big.Units, sides[0].bytesPerEvent(), one.Units)
	if n := sides[0].cycles + sides[1].cycles; n > 0 {
		note += fmt.Sprintf("; collected %d times at the %d GiB memory limit", n, simMemoryLimit>>30)
	}
	return row(c.name, "events/CPU-s", fmt.Sprintf("(1×, %d %s)", one.Units, one.Unit), sides[1].rate(), sides[0].rate(),
		target{atLeast: true, bound: 0.9}, note), nil
}

// balancedRuns is how many runs of the 1× case take about as long as one of the k× case
// (their CPU times big and one): at least 1, at most maxBalancedRuns.
func balancedRuns(big, one time.Duration) int {
	if one <= 0 {
		return 1
	}
	return int(min(max(math.Round(float64(big)/float64(one)), 1), maxBalancedRuns))
}

// maxBalancedRuns bounds a round's 1× runs (a 1× case that runs in microseconds).
const maxBalancedRuns = 64
