package dyorcsys

import (
	"strings"
	"testing"

	"github.com/plan-dev/plan/planner/dyorc"
)

// TestDefaultNotes: the spread placement is named when --min-gpus is unset, nothing when
// it is given.
func TestDefaultNotes(t *testing.T) {
	f := dyorc.DefaultFlags()
	if got := defaultNotes(f); len(got) != 1 || !strings.HasPrefix(got[0], "--min-gpus unset (default)") {
		t.Errorf("notes %q, want the spread placement named", got)
	}
	f.MinGPUs = true
	if got := defaultNotes(f); got != nil {
		t.Errorf("notes %q with --min-gpus given, want none", got)
	}
}
