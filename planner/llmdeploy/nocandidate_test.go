package llmdeploy

import (
	"errors"
	"strings"
	"testing"

	"github.com/plan-dev/plan/planner"
)

// TestNoCandidateError: a comparison with no candidate at all says so — not that an SLO
// cannot be met — and is still infeasible to callers.
func TestNoCandidateError(t *testing.T) {
	err := error(noCandidateError{models: []string{"llama-3.1-70b"}})
	if !errors.Is(err, planner.ErrInfeasible) {
		t.Error("not infeasible")
	}
	if msg := err.Error(); strings.Contains(msg, "SLO") || !strings.Contains(msg, "no candidate exists for llama-3.1-70b") {
		t.Errorf("message %q", msg)
	}
}
