package simulate

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/sim"
)

// TestCheckFlags: the sweep's numeric flags out of range are refused, naming the flag.
func TestCheckFlags(t *testing.T) {
	ok := Args{Duration: time.Second}
	for _, c := range []struct {
		name string
		edit func(*Args)
		want string // "" = accepted
	}{
		{"defaults", func(*Args) {}, ""},
		{"zero duration", func(a *Args) { a.Duration = 0 }, "--duration: 0s: must be > 0"},
		{"cancel NaN", func(a *Args) { a.Cancel = math.NaN() }, "--cancel: NaN: must be in [0, 1]"},
		{"cancel all", func(a *Args) { a.Cancel = 1 }, ""},
		{"jitter 1", func(a *Args) { a.Jitter = 1 }, "--jitter: 1: must be in [0, 1)"},
		{"parallel", func(a *Args) { a.Parallel = -1 }, "--parallel: -1: must be >= 0"},
		{"report given empty", func(a *Args) { a.ReportSet = true }, `--report: "": `},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := ok
			c.edit(&a)
			err := CheckFlags(&a)
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Errorf("CheckFlags: %v, want %q", err, c.want)
			}
		})
	}
}

// TestMaxLoadLine: the max load line names the target, the warm-up excluded, and a limit
// the find-limit extension capped.
func TestMaxLoadLine(t *testing.T) {
	for _, c := range []struct {
		name string
		rep  sim.Report
		want string
	}{
		{"none", sim.Report{}, "max load factor at 99% attainment: none of the simulated loads"},
		{"warm-up", sim.Report{MaxLoad99: 1, WarmupUs: 400_000}, "max load factor at 99% attainment, warm-up 400ms excluded: 1.00"},
		{"capped", sim.Report{MaxLoad99: 8, LimitCap: 8, Extended: true}, "max load factor at 99% attainment: 8.00 (the sweep's cap: it holds there; the limit is higher)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := maxLoadLine(&c.rep); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}
