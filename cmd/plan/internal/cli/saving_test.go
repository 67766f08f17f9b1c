package cli

import (
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/planner/schedule"
)

// TestSavingPhrase: a saving is printed only when some window's fleet differs from the peak
// plan's, and an extra cost is said as one, not as a negative saving.
func TestSavingPhrase(t *testing.T) {
	l4 := func(n int) []formats.FleetGPU { return []formats.FleetGPU{{GPU: "L4", Count: n}} }
	sched := func(windows ...int) *schedule.Schedule {
		s := &schedule.Schedule{Peak: schedule.Entry{GPUsUsed: l4(4)}}
		for _, n := range windows {
			s.Windows = append(s.Windows, schedule.Entry{GPUsUsed: l4(n)})
		}
		return s
	}
	cases := []struct {
		name   string
		s      *schedule.Schedule
		saving float64
		want   string
	}{
		{"identical fleets, overlap cost", sched(4, 4), -0.006, "no saving: every window runs the peak plan's fleet"},
		{"smaller windows", sched(2, 4), 0.25, "saving 25.0%"},
		{"switches cost more", sched(2, 4), -0.031, "costs 3.1% more"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := run.SavingPhrase(c.s, c.saving); got != c.want {
				t.Errorf("%q, want %q", got, c.want)
			}
		})
	}
}
