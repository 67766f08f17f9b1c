package solve

import "testing"

// TestRateMargin reads a window plan's provenance.rate_margin, the factor the rate lever
// solved it at (shown in the schedule's SOLVED AT column); absent or unreadable is 0.
func TestRateMargin(t *testing.T) {
	for _, tc := range []struct {
		plan string
		want float64
	}{
		{`{"provenance":{"rate_margin":2}}`, 2},
		{`{"provenance":{}}`, 0},
		{`{}`, 0},
		{`not json`, 0},
	} {
		if got := rateMargin([]byte(tc.plan)); got != tc.want {
			t.Errorf("%s: %g, want %g", tc.plan, got, tc.want)
		}
	}
}
