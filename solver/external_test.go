package solver_test

import (
	"errors"
	"os"
	"testing"

	"github.com/plan-dev/plan/solver"
)

// requireOrSkip skips on a missing backend unless PLAN_REQUIRE_ALL=1.
func requireOrSkip(t *testing.T, err error) {
	t.Helper()
	if os.Getenv("PLAN_REQUIRE_ALL") == "1" || !errors.Is(err, solver.ErrBackendUnavailable) {
		t.Fatalf("HiGHS backend: %v", err)
	}
	t.Skipf("HiGHS backend unavailable: %v", err)
}
