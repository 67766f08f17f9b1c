package run

import (
	"fmt"
	"strings"
	"time"

	"github.com/plan-dev/plan/planner/schedule"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
)

// Pct renders a share as a percentage with two decimals.
func Pct(x float64) string { return fmt.Sprintf("%.2f%%", 100*x) }

// FmtLatencyMs renders a latency percentile in milliseconds: "none answered" for 0, the
// percentile of no answered request.
func FmtLatencyMs(ms float64) string {
	if ms == 0 {
		return "none answered"
	}
	return FmtMs(ms)
}

// FmtMs renders a solve time in ms as a duration rounded to the millisecond.
func FmtMs(ms float64) string {
	if ms == 0 {
		return "solve time not recorded"
	}
	return (time.Duration(ms * float64(time.Millisecond))).Round(time.Millisecond).String()
}

// FmtSecs renders seconds as a duration.
func FmtSecs(s float64) string { return time.Duration(s * float64(time.Second)).String() }

// Us is d in the engine's microseconds.
func Us(d time.Duration) dataplane.Time { return dataplane.Time(d / time.Microsecond) }

// Short cuts a digest to 19 characters and an ellipsis.
func Short(d string) string {
	if len(d) > 19 {
		return d[:19] + "…"
	}
	return d
}

// Sum adds x.
func Sum(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s
}

// FleetShort names a fleet as "2×A100 + 4×L4" ("none" when it uses no GPU).
func FleetShort(g []formats.FleetGPU) string {
	parts := make([]string, 0, len(g))
	for _, x := range g {
		if x.Count > 0 {
			parts = append(parts, fmt.Sprintf("%d×%s", x.Count, x.GPU))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " + ")
}

// SavingPhrase says what a schedule saves against its peak plan kept all day: nothing when
// every window runs the peak plan's fleet (a difference in cost is then only the switches'
// overlap or rounding, not a saving), else the saving, or the extra cost, signed in words.
func SavingPhrase(s *schedule.Schedule, saving float64) string {
	peak := FleetShort(s.Peak.GPUsUsed)
	differ := false
	for _, w := range s.Windows {
		differ = differ || FleetShort(w.GPUsUsed) != peak
	}
	switch {
	case !differ:
		return "no saving: every window runs the peak plan's fleet"
	case saving < 0:
		return fmt.Sprintf("costs %.1f%% more", -saving*100)
	default:
		return fmt.Sprintf("saving %.1f%%", saving*100)
	}
}

// MaxRequestsPerPoint bounds one simulated load point's (or one replay's) arrivals: the
// simulator keeps every request's life-cycle record, about half a kilobyte each, and load
// points run in parallel.
const MaxRequestsPerPoint = 5_000_000
