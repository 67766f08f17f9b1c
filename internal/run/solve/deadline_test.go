package solve_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/registry/system"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/internal/run/solve"
	"github.com/plan-dev/plan/planner"
)

// ppipeParts are the extension points of PPipe's system that a solve and its prediction use.
type ppipeParts interface {
	system.Planning
	system.Deploying
	system.Checking
}

// recordingSystem is PPipe's system whose planners are settingsRecorders.
type recordingSystem struct {
	ppipeParts
	mu  *sync.Mutex
	got *[]solveCall
}

func (r recordingSystem) NewPlanner() planner.Planner {
	return settingsRecorder{Planner: r.ppipeParts.NewPlanner(), mu: r.mu, got: r.got}
}

// settingsRecorder is a system's planner that records the settings of each solve it is
// asked for and solves with the system's own planner.
type settingsRecorder struct {
	planner.Planner
	mu  *sync.Mutex
	got *[]solveCall
}

type solveCall struct {
	at time.Time
	s  planner.Settings
}

func (r settingsRecorder) Solve(ctx context.Context, in planner.Inputs, s planner.Settings) (*formats.Plan, error) {
	r.mu.Lock()
	*r.got = append(*r.got, solveCall{at: time.Now(), s: s})
	r.mu.Unlock()
	return r.Planner.Solve(ctx, in, s)
}

// TestTimeLimitIsTheCommandsDeadline: plan solve gives its planner the deadline of the whole
// command, its start plus --time-limit, set before the inputs are read, and records the
// --time-limit given; every solve of the command (the re-solves at a margin too) gets that
// one deadline. The command's wall time is logged, not asserted: a loaded machine stretches
// it, and the phases' own deadlines are asserted where they are set (planner/ppipe's
// TestDeadlineBoundsEveryCall, internal/run/predict's TestResolveBudget).
func TestTimeLimitIsTheCommandsDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("solves the demo")
	}
	var mu sync.Mutex
	var got []solveCall
	var syss []system.Plugin
	for _, s := range systems.BuildInTree() {
		if s.Name() == "ppipe" {
			s = recordingSystem{ppipeParts: s.(ppipeParts), mu: &mu, got: &got}
		}
		syss = append(syss, s)
	}
	const limit = 3 * time.Second
	began := time.Now()
	code, _, stderr := solveRun(t, solve.Args{Systems: systems.New(syss...), TimeLimit: limit}, false)
	wall := time.Since(began)
	t.Logf("plan solve --time-limit %s: %s wall, %d solves", limit, wall, len(got))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if len(got) == 0 {
		t.Fatal("the ppipe planner was not asked to solve")
	}
	first := got[0]
	d := first.s.Deadline
	if d.IsZero() || d.Before(began.Add(limit)) || d.After(first.at.Add(limit)) {
		t.Errorf("deadline %v after the test's start: want the command's start plus %s, before the solve began", d.Sub(began), limit)
	}
	if first.s.TimeLimit != limit {
		t.Errorf("time limit %s, want %s (what the plan records)", first.s.TimeLimit, limit)
	}
	for i, c := range got[1:] {
		if !c.s.Deadline.Equal(d) || c.s.TimeLimit > d.Sub(c.at) {
			t.Errorf("re-solve %d: deadline %v, limit %s at %v; want the command's deadline %v and a limit within it",
				i+1, c.s.Deadline.Sub(began), c.s.TimeLimit, c.at.Sub(began), d.Sub(began))
		}
	}
}

// latePlanner is a system's planner that returns at the command's deadline (where its
// settings carry one): its own plan, or with refuse a refusal of the workload's target. It
// counts the solves it is asked for.
type latePlanner struct {
	planner.Planner
	refuse bool
	calls  *atomic.Int32
}

func (l latePlanner) Solve(ctx context.Context, in planner.Inputs, s planner.Settings) (*formats.Plan, error) {
	l.calls.Add(1)
	plan, err := l.Planner.Solve(ctx, in, s)
	if !s.Deadline.IsZero() {
		time.Sleep(time.Until(s.Deadline))
	}
	if l.refuse {
		return nil, &planner.InputError{Problems: []string{fmt.Sprintf("workload: models[0].slo: %v", planner.ErrInfeasible)}}
	}
	return plan, err
}

// lateSystem is PPipe's system whose planners are latePlanners.
type lateSystem struct {
	ppipeParts
	refuse bool
	calls  *atomic.Int32
}

func (l lateSystem) NewPlanner() planner.Planner {
	return latePlanner{Planner: l.ppipeParts.NewPlanner(), refuse: l.refuse, calls: l.calls}
}

// lateSystems is the in-tree registry with PPipe's planner returning at the deadline.
func lateSystems(refuse bool, calls *atomic.Int32) *systems.Registry {
	var syss []system.Plugin
	for _, s := range systems.BuildInTree() {
		if s.Name() == "ppipe" {
			s = lateSystem{ppipeParts: s.(ppipeParts), refuse: refuse, calls: calls}
		}
		syss = append(syss, s)
	}
	return systems.New(syss...)
}

// TestDeadlineReachesThePrediction: the command's deadline bounds its plan's prediction, the
// runs at the plan's rates included. A planner that returns at the deadline leaves them no
// time: they are cancelled at once, and a plan they did not check is not written (exit 1,
// the one thing to change named), rather than the command running past its --time-limit to
// check it. A prediction cut part way is sim's (TestStartPredictionDeadline); what a
// stopped headroom search says, predict's (TestStoppedSearchPhrases).
func TestDeadlineReachesThePrediction(t *testing.T) {
	if testing.Short() {
		t.Skip("solves the demo")
	}
	var calls atomic.Int32
	out := filepath.Join(t.TempDir(), "plan.json")
	const limit = 2 * time.Second
	began := time.Now()
	code, _, stderr := solveRun(t, solve.Args{Systems: lateSystems(false, &calls), TimeLimit: limit, Out: out}, false)
	took := time.Since(began)
	if code != 1 || !strings.Contains(stderr, "not checked in time: raise --time-limit (nothing written)") {
		t.Fatalf("exit %d: %s; want 1 saying the plan was not checked in time", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a plan was written (%v)", err)
	}
	t.Logf("--time-limit %s: the command took %s", limit, took)
}

// TestDeadlineReachesTheExplanation: a solve refused at the command's deadline leaves its
// explanation no time: it starts no probe solve and says why there is none, instead of
// running on a --time-limit of its own after the failed solve.
func TestDeadlineReachesTheExplanation(t *testing.T) {
	if testing.Short() {
		t.Skip("solves the demo")
	}
	var calls atomic.Int32
	code, _, stderr := solveRun(t, solve.Args{Systems: lateSystems(true, &calls), TimeLimit: 2 * time.Second}, false)
	if code != 2 {
		t.Fatalf("exit %d, want 2: %s", code, stderr)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d solves: want the refused one alone, no probe of the explanation", n)
	}
	if !strings.Contains(stderr, "no explanation: no time left for the explanation: --time-limit 2s passed") {
		t.Errorf("the error does not say the explanation had no time:\n%s", stderr)
	}
}
