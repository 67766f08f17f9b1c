package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/internal/registry/system"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/internal/registry/systems/toysys"
	"github.com/plan-dev/plan/serve"
)

// TestHelpGolden: plan --help, plan solve --help and plan systems (table and JSON) are
// generated from the registry; their output is compared with testdata/help (-update
// rewrites it), and checked for what the registry holds, so a golden file rewritten from a
// broken help fails too.
func TestHelpGolden(t *testing.T) {
	var names []string
	for _, s := range systems.Default().Systems() {
		names = append(names, s.Name())
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
					for _, f := range in.SolveFlags {
						if f.Name == "runtime-policy" && f.Default != in.Name {
							t.Errorf("system %s: --runtime-policy defaults to %q", in.Name, f.Default)
						}
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

// TestHelpFromRegistry: the help and `plan systems` follow the registry the CLI is built
// with: a sixth system (the toy) appears in the systems table, in solve's planners with its
// own flags, and in `plan systems -O json`, with no help text naming it.
func TestHelpFromRegistry(t *testing.T) {
	reg := systems.InTreeWith(toysys.New)
	run := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := RunWith(args, Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, Options{Systems: reg}); code != 0 {
			t.Fatalf("plan %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
		}
		return out.String()
	}
	toy, _ := reg.ByName(toysys.Name)
	pols := toy.(system.Deploying).Policies()
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--help"}, []string{"  " + toy.Name() + " ", toy.Doc(), toy.Sections().WorkloadKeys()[0]}},
		{[]string{"systems"}, []string{"  " + toy.Name() + " ", toy.Doc(), pols[0].Name}},
		{[]string{"solve", "--help"}, []string{"Flags of the " + toy.Name() + " planner", "--toy-max-util", "  " + toy.Sections().WorkloadKeys()[0] + " ", "→ " + toy.Name() + " "}},
	} {
		out := run(c.args...)
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("plan %s lacks %q:\n%s", strings.Join(c.args, " "), w, out)
			}
		}
	}
	var infos []systemInfo
	if err := json.Unmarshal([]byte(run("systems", "-O", "json")), &infos); err != nil || len(infos) != len(reg.Systems()) || infos[len(infos)-1].Name != toy.Name() {
		t.Errorf("plan systems -O json: %d systems (%v), last %+v", len(infos), err, infos[len(infos)-1:])
	}
}

// TestServeHelpRoutes: `plan serve --help` lists every route a server
// registers, the core routes and every system's front end's (the OpenAI API of QLM plans, the
// workflow route of DyOrc plans), from the tables the registration itself uses.
func TestServeHelpRoutes(t *testing.T) {
	code, stdout, stderr := runCLI(t, "serve", "--help")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := []string{"POST /v1/chat/completions", "POST /v1/completions", "GET /v1/models", "POST /v1/queue",
		"GET /v1/queue/{id}", "GET /v1/engines", "POST /v1/workflows/{app}/run", "Routes of qlm plans:", "Routes of dyorc plans:"}
	for _, d := range serve.CoreRoutes() {
		want = append(want, d.Pattern)
	}
	for _, w := range want {
		if !strings.Contains(stdout, "\n  "+w+" ") && !strings.Contains(stdout, w+"\n") {
			t.Errorf("serve --help lacks %q:\n%s", w, stdout)
		}
	}
}
