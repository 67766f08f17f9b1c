package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/internal/systems"
)

// TestHelpGolden: plan --help, plan solve --help and plan systems (table and JSON) are
// generated from the registry; their output is compared with testdata/help (-update
// rewrites it), and checked for what the registry holds, so a golden file rewritten from a
// broken help fails too.
func TestHelpGolden(t *testing.T) {
	var names []string
	for _, s := range systems.InTree() {
		names = append(names, s.Name)
	}
	if len(names) < 5 {
		t.Fatalf("registry lists %d systems", len(names))
	}
	for _, c := range []struct {
		file string
		args []string
		want []string
		not  []string
	}{
		{"root.txt", []string{"--help"}, []string{"SYSTEM", "WORKLOAD", "PLAN", "POLICIES", "BENCH", "EXPORT", "llm_classes", "cascadeserve", "triton"}, nil},
		{"solve.txt", []string{"solve", "--help"}, []string{
			"Flags of the ppipe planner", "Flags of the pard planner", "Flags of the dyorc planner", "Flags of the cascade planner", "Flags of the qlm planner",
			"llm_classes  → qlm", `(plan simulate/serve --policy overrides it) (default "dyorc")`, `(plan simulate/serve --policy overrides it) (default "pard")`,
		}, []string{"(pard) (default", "(ppipe)"}},
		{"systems.txt", []string{"systems"}, []string{"qlm-no-guard", "pipelines"}, nil},
		{"systems.json", []string{"systems", "-O", "json"}, []string{`"export_targets"`}, nil},
	} {
		t.Run(c.file, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, c.args...)
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			for _, n := range names {
				c.want = append(c.want, n+" ")
			}
			if c.file == "systems.json" {
				c.want = nil
				var infos []systemInfo
				if err := json.Unmarshal([]byte(stdout), &infos); err != nil || len(infos) != len(names) {
					t.Fatalf("%d systems in JSON (%v), want %d", len(infos), err, len(names))
				}
				for i, in := range infos {
					if in.Name != names[i] || in.Doc == "" || len(in.Policies) == 0 || in.PlanSection == "" {
						t.Errorf("system %d: %+v", i, in)
					}
				}
			}
			for _, w := range c.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("output lacks %q", w)
				}
			}
			for _, n := range c.not {
				if strings.Contains(stdout, n) {
					t.Errorf("output has %q", n)
				}
			}
			golden := filepath.Join("testdata", "help", c.file)
			if *update {
				if err := os.WriteFile(golden, []byte(stdout), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if stdout != string(want) {
				t.Errorf("output differs from %s (go test ./cmd/plan/internal/cli -run HelpGolden -update):\n%s", golden, stdout)
			}
		})
	}
}
