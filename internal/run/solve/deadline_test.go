package solve_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run/solve"
	"github.com/plan-dev/plan/internal/system"
	"github.com/plan-dev/plan/internal/systems"
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
