package cli

import (
	"strings"
	"testing"
)

func TestBenchBadInput(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"bench"}, "needs a benchmark"},
		{[]string{"bench", "ppipe", "--hc", "HC9"}, "--hc"},
		{[]string{"bench", "ppipe", "--groups", "G7"}, "--groups"},
		{[]string{"bench", "ppipe", "--trace", "uniform"}, "--trace"},
		{[]string{"bench", "ppipe", "--cv", "0"}, "--cv"},
	}
	for _, c := range cases {
		code, out, errs := runCLI(t, c.args...)
		if code != ExitUsage || !strings.Contains(errs, c.want) || out != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2 mentioning %q", c.args, code, errs, out, c.want)
		}
	}
}
