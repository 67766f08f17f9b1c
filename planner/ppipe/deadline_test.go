package ppipe

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats/sections/ppipesec"
	"github.com/plan-dev/plan/solver"
)

// TestDeadlineBoundsEveryCall: a caller's deadline (Options.Deadline: plan solve's start
// plus --time-limit) earlier than the solve's start plus TimeLimit bounds every solver call
// of every phase, less the caller's reserve, and the solve still returns its incumbent.
// The assertion is on the limits each call is given and the time it is stopped at, which
// the session fixes before the call starts, not on a wall time a loaded machine stretches.
// Every strategy: NP's one MILP is the whole solve, so it reserves before it.
func TestDeadlineBoundsEveryCall(t *testing.T) {
	if testing.Short() {
		t.Skip("solves a large instance")
	}
	c := benchCases[1]
	const reserve = 300 * time.Millisecond
	for _, tc := range []struct {
		strategy string
		// unreserved names the phase that runs before the reserve is known (its plan sizes
		// it: reserveFor); "" where the reserve is known before the first call.
		unreserved string
	}{
		{strategy: StrategyPPipe, unreserved: "np"},
		{strategy: StrategyDARTR, unreserved: "np"},
		{strategy: StrategyNP},
	} {
		t.Run(tc.strategy, func(t *testing.T) {
			began := time.Now()
			deadline := began.Add(2 * time.Second)
			type call struct {
				phase string
				at    time.Time
				limit time.Duration
				hard  time.Time
			}
			var mu sync.Mutex
			var calls []call
			o := Options{Strategy: tc.strategy, Alpha: DefaultAlpha, MaxPartitions: c.P, TimeLimit: time.Minute, Deadline: deadline,
				Reserve: func(float64) time.Duration { return reserve }}
			o = o.withHooks(solveHooks{call: func(phase string, limit time.Duration, hard time.Time) {
				mu.Lock()
				defer mu.Unlock()
				calls = append(calls, call{phase: phase, at: time.Now(), limit: limit, hard: hard})
			}})
			pl, err := Solve(context.Background(), c.inputs(), o)
			skipWithoutSolver(t, err)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%v for a 2 s deadline: status %s, %d solver calls", time.Since(began), pl.Provenance.Status, len(calls))
			if len(calls) == 0 {
				t.Fatal("no solver call reported")
			}
			// The session's end is the deadline (not began + 1 min), its phases' deadline
			// that less the reserve once the reserve is known; a call is stopped at most
			// overrun past it, overrun of the session's span.
			over := overrun(deadline.Sub(began))
			for i, k := range calls {
				end := deadline.Add(-reserve)
				if k.phase == tc.unreserved {
					end = deadline
				}
				if k.hard.After(end.Add(over)) {
					t.Errorf("call %d (%s) stopped %v past its deadline, more than the overrun %v", i, k.phase, k.hard.Sub(end), over)
				}
				if k.limit > max(end.Sub(k.at), minCall) {
					t.Errorf("call %d (%s): HiGHS limit %v, past the %v left to its deadline", i, k.phase, k.limit, end.Sub(k.at))
				}
			}
			if v := Verify(pl); len(v) > 0 {
				t.Errorf("violations: %v", v)
			}
		})
	}
	began := time.Now()
	// A deadline later than began + TimeLimit leaves TimeLimit.
	s := newSession(context.Background(), &problem{opts: Options{TimeLimit: time.Second, Deadline: began.Add(time.Hour)}}, began)
	if !s.end.Equal(began.Add(time.Second)) {
		t.Errorf("session end %v after began, want TimeLimit 1s", s.end.Sub(began))
	}
}

// TestLateSolveKeepsItsPlan: once the deadline has passed with a plan in hand, no later
// phase starts: none would build its model and spend its minimum call past the limit. The
// NP warm start is solved, then held until the deadline has passed (the result hook: a
// loaded machine's slow first phase); the plan it gave is written at the time limit. The
// NP warm start runs before the full space is built, and the full space is not built
// after it: the plan reports the NP search's options, as strategy np's plan does.
func TestLateSolveKeepsItsPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("solves a large instance")
	}
	c := benchCases[1]
	deadline := time.Now().Add(time.Second)
	var mu sync.Mutex
	var phases []string
	o := Options{Strategy: StrategyPPipe, Alpha: DefaultAlpha, MaxPartitions: c.P, TimeLimit: time.Minute, Deadline: deadline}
	o = o.withHooks(solveHooks{
		call: func(phase string, _ time.Duration, _ time.Time) {
			mu.Lock()
			defer mu.Unlock()
			phases = append(phases, phase)
		},
		result: func(phase string, res *solver.Result) *solver.Result {
			if phase == "np" {
				time.Sleep(time.Until(deadline) + 10*time.Millisecond)
			}
			return res
		},
	})
	pl, err := Solve(context.Background(), c.inputs(), o)
	skipWithoutSolver(t, err)
	if err != nil {
		t.Fatal(err)
	}
	if len(phases) == 0 {
		t.Fatal("no solver call reported")
	}
	for _, ph := range phases {
		if ph != "np" {
			t.Errorf("phase %s ran after the deadline (phases %v)", ph, phases)
		}
	}
	if pl.Provenance.Status != "time-limit" {
		t.Errorf("status %q, want time-limit", pl.Provenance.Status)
	}
	npPlan, err := Solve(context.Background(), c.inputs(), Options{Strategy: StrategyNP, Alpha: DefaultAlpha, MaxPartitions: c.P, TimeLimit: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	got, want := ppipesec.PlanOf(pl).Extra["options_kept"], ppipesec.PlanOf(npPlan).Extra["options_kept"]
	if got != want {
		t.Errorf("the late plan reports %s options kept, strategy np's %s: the full space was built after the deadline", got, want)
	}
}

// TestCallsWithoutPresolve: every solver call of a solve (its LP relaxations and its MILPs)
// runs without HiGHS's presolve, whose passes read no clock (a time limit and a cancelled
// context land only between them). Each call's part of the HiGHS log is told apart by the
// call hook, which runs before the call.
func TestCallsWithoutPresolve(t *testing.T) {
	var mu sync.Mutex
	var log strings.Builder
	var phases []string
	var starts []int
	o := Options{Strategy: StrategyPPipe, Alpha: DefaultAlpha, MaxPartitions: 2, TimeLimit: time.Minute, Deterministic: true}
	o = o.withHooks(solveHooks{
		log: lockedWriter{mu: &mu, w: &log},
		call: func(phase string, _ time.Duration, _ time.Time) {
			mu.Lock()
			defer mu.Unlock()
			phases, starts = append(phases, phase), append(starts, log.Len())
		},
	})
	_, err := Solve(context.Background(), benchCases[0].inputs(), o)
	skipWithoutSolver(t, err)
	if err != nil {
		t.Fatal(err)
	}
	all := log.String()
	relaxations, milps := 0, 0
	for i, phase := range phases {
		end := len(all)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		part := all[starts[i]:end]
		if strings.Contains(part, "Presolving model") {
			t.Errorf("call %d (%s) ran presolve", i, phase)
		}
		switch {
		case strings.Contains(part, "Solving LP without presolve"):
			relaxations++
		case strings.Contains(part, "MIP"):
			milps++
		}
	}
	if relaxations == 0 || milps == 0 {
		t.Fatalf("phases %v: %d LP relaxations and %d MILPs logged; want both", phases, relaxations, milps)
	}
}

// lockedWriter serialises writes to w (a raced MILP's racers log from their goroutines).
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
