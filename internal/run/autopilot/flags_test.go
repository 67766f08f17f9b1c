package autopilot

import (
	"strings"
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// TestCheckGiven: an --autopilot-* flag needs --autopilot; serve refuses simulate's own.
func TestCheckGiven(t *testing.T) {
	for _, tc := range []struct {
		mode    string
		given   []string
		serving bool
		want    string
	}{
		{"", []string{"load", "seed"}, false, ""},
		{"", []string{"autopilot-window"}, false, "--autopilot-window needs --autopilot"},
		{"on", []string{"autopilot-load-time"}, false, ""},
		{"on", []string{"autopilot-load-time"}, true, "--autopilot-load-time applies to plan simulate"},
		{"advise", []string{"autopilot-resolve-delay"}, true, "--autopilot-resolve-delay applies to plan simulate"},
	} {
		a := Flags{Mode: tc.mode}
		err := a.CheckGiven(tc.given, tc.serving)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%q %v serving=%v: %v, want %q", tc.mode, tc.given, tc.serving, err, tc.want)
		}
	}
}

// TestWindowRates: the mean over the run and the peak over one whole slice.
func TestWindowRates(t *testing.T) {
	// 1 s slices over 3 s: 1, 3 and 0 arrivals; the half slice after 3 s is not counted.
	mean, peak := windowRates([]dataplane.Time{100, 1_100_000, 1_200_000, 1_300_000}, 1_000_000, 3_000_000)
	if mean != 4.0/3 || peak != 3 {
		t.Errorf("windowRates = %g, %g; want %g, 3", mean, peak, 4.0/3)
	}
	if m, p := windowRates(nil, 0, 1); m != 0 || p != 0 {
		t.Errorf("zero width: %g, %g", m, p)
	}
}
