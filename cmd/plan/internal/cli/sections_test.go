package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A plan or workload section no registered system claims is bad input (exit 2) naming the
// section and the systems that exist, in every command that reads the file.
func TestUnknownSection(t *testing.T) {
	dir := t.TempDir()
	workload := filepath.Join(dir, "workload.yaml")
	os.WriteFile(workload, []byte("apiVersion: plan/v1\nkind: Workload\nmetadata: {name: w}\nrobots: {rate_rps: 1}\n"), 0o644)
	plan := filepath.Join(dir, "plan.json")
	raw, err := os.ReadFile(fixture("one-gpu.json"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(plan, []byte(strings.Replace(string(raw), `"ppipe":`, `"robots": {}, "ppipe":`, 1)), 0o644)
	const systems = "no registered system claims it (systems: cascade, dyorc, pard, ppipe, qlm)"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"validate", workload}, "robots: unknown workload section: " + systems},
		{[]string{"solve", "--workload", workload, "-o", filepath.Join(dir, "out.json")}, workload + ": robots: unknown workload section: " + systems},
		{[]string{"validate", plan}, "robots: unknown plan section: " + systems},
		{[]string{"simulate", plan}, plan + ": robots: unknown plan section: " + systems},
		{[]string{"check", plan}, plan + ": robots: unknown plan section: " + systems},
		{[]string{"export", plan, "--to", "triton", "-o", filepath.Join(dir, "x")}, plan + ": robots: unknown plan section: " + systems},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			code, out, errOut := runCLI(t, tc.args...)
			if code != ExitUsage || !strings.Contains(out+errOut, tc.want) {
				t.Fatalf("exit %d, output %q %q; want exit 2 with %q", code, out, errOut, tc.want)
			}
		})
	}
}
