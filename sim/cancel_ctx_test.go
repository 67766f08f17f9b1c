package sim

import (
	"context"
	"errors"
	"testing"

	rt "github.com/plan-dev/plan/dataplane"
)

// TestRunObservesCancel: a run with a context stops once it is cancelled, within
// CancelCheckEvents events of the cancellation, returning its cause (SIGINT and SIGTERM
// reach `plan simulate --llm` and every sweep this way); a live context changes nothing.
func TestRunObservesCancel(t *testing.T) {
	for _, tc := range []struct {
		name string
		// cancelAfter cancels once that many requests finished (-1: never; 0: before the run).
		cancelAfter int
	}{
		{"live", -1},
		{"cancelled before", 0},
		{"cancelled mid-run", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := qlmSweep(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cfg.Ctx = ctx
			s, err := newPointSimCompact(cfg, 1, false)
			if err != nil {
				t.Fatal(err)
			}
			finished, at := 0, int64(-1)
			if tc.cancelAfter == 0 {
				cancel()
				at = 0
			}
			s.opts.OnFinish = func(_ rt.Time, _ *rt.Request) {
				if finished++; finished == tc.cancelAfter {
					cancel()
					at = s.Engine.Events()
				}
			}
			_, err = s.Run()
			switch {
			case tc.cancelAfter < 0 && err != nil:
				t.Fatalf("live run: %v", err)
			case tc.cancelAfter < 0:
			case !errors.Is(err, context.Canceled):
				t.Fatalf("err = %v, want context.Canceled", err)
			case s.Engine.Events()-at > CancelCheckEvents:
				t.Fatalf("%d events after the cancellation, want at most %d", s.Engine.Events()-at, CancelCheckEvents)
			}
		})
	}
}
