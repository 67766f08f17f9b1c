package frontier

import (
	"strings"
	"testing"
)

// TestParseSweep: exactly one of --rate, --slo and --accuracy, each point labelled as the
// table prints it; a bad value names the flag and the value.
func TestParseSweep(t *testing.T) {
	for _, tc := range []struct {
		args   Args
		what   string
		labels []string
		err    string
	}{
		{Args{Rate: "0.5:1.5:0.5"}, "rate", []string{"0.5×", "1×", "1.5×"}, ""},
		{Args{SLO: "200ms, 1s"}, "slo_ms", []string{"200ms", "1s"}, ""},
		{Args{Accuracy: "0.9,1"}, "accuracy", []string{"0.9", "1"}, ""},
		{Args{}, "", nil, "give exactly one of --rate, --slo and --accuracy"},
		{Args{Rate: "1", SLO: "1s"}, "", nil, "give exactly one"},
		{Args{SLO: "0s"}, "", nil, `--slo "0s": "0s": must be a duration > 0`},
		{Args{Accuracy: "1.5"}, "", nil, `--accuracy "1.5": "1.5": must be in (0, 1]`},
	} {
		what, pts, err := parseSweep(tc.args)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%+v: error %v, want %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || what != tc.what || len(pts) != len(tc.labels) {
			t.Fatalf("%+v: %q, %d points, %v", tc.args, what, len(pts), err)
		}
		for i, p := range pts {
			if p.label != tc.labels[i] {
				t.Errorf("%+v: point %d label %q, want %q", tc.args, i, p.label, tc.labels[i])
			}
		}
	}
}
