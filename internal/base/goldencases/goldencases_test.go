package goldencases

import "testing"

func TestOf(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // "" when no case matches
	}{
		{"the embedded demo: inputs not named", []string{"-o", "plan.json"}, ""},
		{"flags in another order", []string{"--workload", "testdata/qlm/workload.yaml", "-o", "qlm.json", "--cluster", "testdata/qlm/cluster.yaml", "--profile", "testdata/qlm/profile.json"}, "qlm-3classes.json"},
		{"quiet and deterministic", []string{"-q", "--deterministic", "--cluster", "testdata/pard/cluster.json", "--profile", "testdata/pard/profile.json", "--workload", "testdata/pard/workload.json"}, "pard-4apps.json"},
		{"one flag more", []string{"--cluster", "testdata/pard/cluster.json", "--profile", "testdata/pard/profile.json", "--workload", "testdata/pard/workload.json", "--slo", "200ms"}, ""},
		{"a DyOrc case names no profile", []string{"--cluster", "testdata/dyorc/cluster-small.json", "--workload", "testdata/dyorc/small.json"}, ""},
		{"another value", []string{"--spot", "0.4", "--profile", "testdata/cost/llm-profile.json", "--cluster", "testdata/cost/cluster-llm-spot.yaml", "--workload", "testdata/cost/workload-llm-busy.yaml", "--objective", "cost"}, ""},
		{"a flag without its value", []string{"--strategy"}, ""},
		{"a spot solve", []string{"--objective", "cost", "--spot", "0.5", "--profile", "testdata/cost/llm-profile.json", "--cluster", "testdata/cost/cluster-llm-spot.yaml", "--workload", "testdata/cost/workload-llm-busy.yaml", "-o", "spot.json"}, "qlm-cost-spot.json"},
		{"a positional argument", []string{"extra", "--strategy", "np"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := Of(tc.args)
			if got := c.File; got != tc.want || ok != (tc.want != "") {
				t.Errorf("Of(%q) = %q, %v; want %q", tc.args, got, ok, tc.want)
			}
		})
	}
}
