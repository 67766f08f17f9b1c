package cli

import (
	"strings"
	"testing"
)

// TestNonFiniteFlagsRefused: NaN and ±Inf in a numeric flag are a usage error naming the flag,
// in every command that has one (the check is the root's, not each command's).
func TestNonFiniteFlagsRefused(t *testing.T) {
	cases := []struct {
		args []string
		flag string
	}{
		{[]string{"simulate", "--jitter", "NaN"}, "--jitter"},
		{[]string{"serve", "--jitter", "Inf"}, "--jitter"},
		{[]string{"simulate", "--cancel", "-Inf"}, "--cancel"},
		{[]string{"simulate", "--autopilot-burst", "NaN"}, "--autopilot-burst"},
		{[]string{"solve", "--gap", "NaN"}, "--gap"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, stderr := runTB(c.args...)
			if code != ExitUsage {
				t.Fatalf("exit %d, want %d; stderr %q", code, ExitUsage, stderr)
			}
			if !strings.Contains(stderr, c.flag+": ") || !strings.Contains(stderr, "finite") {
				t.Fatalf("stderr %q does not name %s as not finite", stderr, c.flag)
			}
		})
	}
}

// TestUnknownStrategyRefused: solve and frontier refuse a --strategy (and frontier a
// --baseline) the system's planner does not take, naming the flag and the values it takes.
func TestUnknownStrategyRefused(t *testing.T) {
	repoRoot(t)
	in := []string{"--profile", "testdata/ppipe/profile.json", "--cluster", "testdata/cost/cluster-priced.yaml", "--workload", "testdata/cost/workload.yaml", "-q"}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"solve", "--strategy", "nosuch", "-o", t.TempDir() + "/p.json"}, `--strategy "nosuch": the ppipe planner takes ppipe, np, dart-r`},
		{[]string{"frontier", "--slo", "100ms,200ms", "--strategy", "nosuch"}, `--strategy "nosuch"`},
		{[]string{"frontier", "--slo", "100ms,200ms", "--baseline", "nosuch"}, `--baseline "nosuch"`},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args[:3], " "), func(t *testing.T) {
			code, stderr := runTB(append(c.args, in...)...)
			if code != ExitUsage || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d naming %s", code, stderr, ExitUsage, c.want)
			}
		})
	}
}
