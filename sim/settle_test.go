package sim

import (
	"reflect"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/workload"
)

// TestMissLimit: the fewest misses at which a target fails, at the rounding's edge.
func TestMissLimit(t *testing.T) {
	att := func(n int64, p float64) func(int64) bool {
		return func(m int64) bool { return attainmentOf(n-m, n) < p }
	}
	for _, tc := range []struct {
		name  string
		n     int64
		fails func(int64) bool
		want  int64
	}{
		{"99% of 100: one miss holds, two fail", 100, att(100, 0.99), 2},
		{"99% of 1000", 1000, att(1000, 0.99), 11},
		{"95% of 20", 20, att(20, 0.95), 2},
		{"99% of 3: any miss fails", 3, att(3, 0.99), 1},
		{"0.9999995 rounds to 1: 1 miss of 2,000,000 holds", 2_000_000, att(2_000_000, 1), 2},
		{"a target of 0 never fails", 50, att(50, 0), never},
		{"fails with none", 10, func(int64) bool { return true }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := workload.MissLimit(tc.n, tc.fails); got != tc.want {
				t.Errorf("MissLimit = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestSettleWatchAtTheBoundary: a watch fails an application at exactly its judge's limit,
// stops only once every application with requests fails and one misses MaxLoadTarget, and
// counts an LLM class's misses per SLO, drops and cancellations in each.
func TestSettleWatchAtTheBoundary(t *testing.T) {
	dep := &dataplane.Deployment{Apps: []dataplane.App{{Name: "a", SLO: dataplane.Second}, {Name: "b", SLO: dataplane.Second, SLOPercentile: 0.9}, {Name: "idle"}, {Name: "chat", SLO: dataplane.Second}}}
	llm := make([]LLMClass, 4)
	llm[3] = LLMClass{Model: "m", TTFTSLO: dataplane.Millisecond, E2EP: 0.8, TTFTP: 0.5, TPOTP: 0.99}
	j := judge{targets: appTargets(dep, llm), llm: llm, dep: dep}
	if want := []float64{MaxLoadTarget, 0.9, MaxLoadTarget, 0.8}; !reflect.DeepEqual(j.targets, want) {
		t.Fatalf("targets %v, want %v", j.targets, want)
	}
	w := newSettleWatch(j, []int64{100, 10, 0, 10}, false)
	// a: 99% of 100, two misses; b: 90% of 10, two misses; chat: E2E at 80% of 10, three misses,
	// TTFT at 50%, six; TPOT checked only where the class sets a limit.
	want := []appSettle{
		{n: 100, att: 2, e2e: never, ttft: never, tpot: never, att99: 2},
		{n: 10, att: 2, e2e: never, ttft: never, tpot: never, att99: 1},
		{n: 0, att: never, e2e: never, ttft: never, tpot: never, att99: never},
		{n: 10, llm: true, att: never, e2e: 3, ttft: 6, tpot: never, att99: 1},
	}
	if !reflect.DeepEqual(w.apps, want) {
		t.Fatalf("limits\n got %+v\nwant %+v", w.apps, want)
	}
	if w.open != 3 {
		t.Fatalf("open %d, want the 3 applications with requests", w.open)
	}
	cols := make([]appCol, 4)
	cols[3].llm = &llmCol{}
	step := func(app int, c func(*appCol), stop bool) {
		t.Helper()
		c(&cols[app])
		if got := w.finished(dataplane.AppID(app), &cols[app]); got != stop {
			t.Fatalf("app %d at %+v: stop %v, want %v", app, cols[app], got, stop)
		}
	}
	late := func(c *appCol) { c.requests++; c.late++ }
	step(0, late, false)
	if w.apps[0].failed || w.below99 {
		t.Fatalf("one miss of 100 failed a")
	}
	step(0, late, false) // a fails, and misses 99%
	if !w.apps[0].failed || !w.below99 || w.open != 2 {
		t.Fatalf("a after two misses: %+v, below99 %v, open %d", w.apps[0], w.below99, w.open)
	}
	step(1, func(c *appCol) { c.requests++; c.dropped++ }, false)
	step(1, func(c *appCol) { c.requests++; c.completed++ }, false)
	step(1, func(c *appCol) { c.requests++; c.cancelled++ }, false) // b fails
	if !w.apps[1].failed || w.open != 1 {
		t.Fatalf("b after two misses: %+v", w.apps[1])
	}
	// chat: five TTFT misses of answered requests hold its 50% line, whatever its attainment.
	for range 5 {
		step(3, func(c *appCol) { c.requests++; c.late++; c.llm.ttftMiss++ }, false)
	}
	// The sixth: a drop, a miss of every SLO (one of three for the E2E line).
	step(3, func(c *appCol) { c.requests++; c.dropped++ }, true)
}

// TestSettleMatchesFullRun: a watched run stops only where the full run fails every
// application with requests and MaxLoadTarget, and one it does not stop is the full run,
// metric for metric: a PPipe deployment of two models under bursty arrivals with jitter
// and a warm-up, and QLM's three LLM classes (E2E, TTFT and TPOT lines), at loads around
// and well past capacity.
func TestSettleMatchesFullRun(t *testing.T) {
	ppipe := sweepCfg(t, 1)
	ppipe.Warmup = 200 * dataplane.Millisecond
	qlm := qlmSweep(t)
	qlm.Duration = 10 * dataplane.Second
	for i := range qlm.LLM { // token-timing lines beside the plan's E2E deadlines
		qlm.LLM[i].TTFTSLO, qlm.LLM[i].TTFTP = 2*dataplane.Second, 0.9
		qlm.LLM[i].TPOTSLO, qlm.LLM[i].TPOTP = 60*dataplane.Millisecond, 0.95
	}
	for _, tc := range []struct {
		name  string
		cfg   *SweepConfig
		loads []float64
	}{
		{"ppipe", ppipe, []float64{0.9, 1.1, 1.3, 2, 4}},
		{"qlm", qlm, []float64{1.5, 6, 12, 24}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			j := judge{targets: appTargets(cfg.Dep, cfg.LLM), llm: cfg.LLM, dep: cfg.Dep}
			watched := *cfg
			watched.settle = &j
			stopped, kept := 0, 0
			for _, load := range tc.loads {
				full, err := RunPoint(cfg, load)
				if err != nil {
					t.Fatal(err)
				}
				got, err := RunPoint(&watched, load)
				if err != nil {
					t.Fatal(err)
				}
				if !got.Stopped {
					kept++
					if !reflect.DeepEqual(got, full) {
						t.Errorf("load %g: a watched run that went on differs from the full run:\n got %+v\nwant %+v", load, got.Total, full.Total)
					}
					continue
				}
				stopped++
				t.Logf("load %g: stopped after %d events of %d", load, got.Events, full.Events)
				if got.Events >= full.Events {
					t.Errorf("load %g: stopped after %d events of the full run's %d", load, got.Events, full.Events)
				}
				for i := range full.Apps {
					if full.Apps[i].Requests > 0 && j.app(full, i) {
						t.Errorf("load %g: stopped, but the full run holds %s: %+v", load, full.Apps[i].Name, full.Apps[i])
					}
					if (got.Apps[i].Requests > 0) != (full.Apps[i].Requests > 0) {
						t.Errorf("load %g: %s counted %d requests stopped, %d in full", load, full.Apps[i].Name, got.Apps[i].Requests, full.Apps[i].Requests)
					}
				}
				if MaxLoadAt([]Point{*full}, MaxLoadTarget) != 0 {
					t.Errorf("load %g: stopped, but the full run holds %g", load, MaxLoadTarget)
				}
			}
			if stopped == 0 || kept == 0 {
				t.Fatalf("%d runs stopped, %d went on: the loads must test both", stopped, kept)
			}
		})
	}
}
