package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestSimulateTableColumns: the table shows each application's (class's) attainment for a
// plan serving several, and the SLO's own percentile for a cascade judged at p95
// (CascadeServe §5); under it, the latency band the plan's prediction recorded for an
// application other than an LLM class.
func TestSimulateTableColumns(t *testing.T) {
	qlm := filepath.Join("..", "..", "..", "..", "testdata", "export", "qlm", "plan.json")
	cases := []struct {
		name       string
		plan       string
		want, gone []string
	}{
		{"classes", qlm, []string{"att mistral-chat", "att mistral-batch", "att vicuna-chat"}, []string{"p95 ms", "expected error of the latency"}},
		{"cascade p95", goldenPlan("cascade-sentiment.json"), []string{"p95 ms", "max load factor with the p95 SLO met (95% attainment): ",
			"expected error of the latency at the plan's rates (its prediction), sentiment: p50 −", "from the spread of 3 runs at load 1"}, []string{"att "}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCLI(t, "simulate", c.plan, "--load", "1", "--duration", "2s", "-q")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			for _, s := range c.want {
				if !strings.Contains(out, s) {
					t.Errorf("table lacks %q:\n%s", s, out)
				}
			}
			for _, s := range c.gone {
				if strings.Contains(out, s) {
					t.Errorf("table has %q:\n%s", s, out)
				}
			}
		})
	}
}
