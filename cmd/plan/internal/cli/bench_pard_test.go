package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func pardFixture(name string) string {
	return filepath.Join("..", "..", "..", "..", "testdata", "pard", name)
}

// TestBenchPARDSmall runs a reduced `plan bench pard` in process and checks the report.
func TestBenchPARDSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates several minutes of virtual time")
	}
	dir := t.TempDir()
	code, out, errs := runCLI(t, "bench", "pard", "--apps", "lv", "--traces", "tweet", "--policies", "none,nexus,clipper++,pard",
		"--seeds", "1", "--seconds", "60", "--report", dir)
	if code == 2 && strings.Contains(errs, "HiGHS") {
		t.Skip("HiGHS backend unavailable")
	}
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{"lv-tweet", "PARD vs the reactive baselines", "+16% to +176%", "Stress test"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, "bench.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Kind   string `json:"kind"`
		Result struct {
			Rows []struct {
				Policy  string  `json:"policy"`
				Goodput float64 `json:"goodput"`
			} `json:"rows"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Kind != "PARDBench" || len(rep.Result.Rows) != 4 {
		t.Errorf("report: kind %q, %d rows", rep.Kind, len(rep.Result.Rows))
	}
}

// TestPARDBadInput: bad pipelines and bench flags exit 2 with the reason, writing nothing.
func TestPARDBadInput(t *testing.T) {
	dir := t.TempDir()
	raw, err := os.ReadFile(pardFixture("workload.json"))
	if err != nil {
		t.Fatal(err)
	}
	mutate := func(name string, f func(pl map[string]any)) string {
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		pl := doc["pipelines"].([]any)[1].(map[string]any) // lv
		doc["pipelines"] = []any{pl}
		f(pl)
		b, _ := json.Marshal(doc)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mods := func(pl map[string]any) []any { return pl["modules"].([]any) }
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"cycle", []string{"solve", "--workload", mutate("cycle.json", func(pl map[string]any) {
			mods(pl)[0].(map[string]any)["after"] = []any{map[string]any{"module": "pose-recognition"}}
		})}, "cycle"},
		{"no profile", []string{"solve", "--workload", mutate("noprof.json", func(pl map[string]any) {
			mods(pl)[1].(map[string]any)["model"] = "missing-model"
		})}, "missing-model"},
		{"slo below batch-1", []string{"solve", "--workload", mutate("slo.json", func(pl map[string]any) { pl["slo"] = "50ms" })},
			"below the sum of batch-1 latencies"},
		{"bench app", []string{"bench", "pard", "--apps", "xx", "--seconds", "60"}, "unknown app"},
		{"bench policy", []string{"bench", "pard", "--policies", "nope", "--seconds", "60"}, "nope"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+"-plan.json")
			args := tc.args
			if args[0] == "solve" {
				args = append(args, "--profile", pardFixture("profile.json"), "--cluster", pardFixture("cluster.json"), "-o", out)
			}
			code, _, errs := runCLI(t, args...)
			if code != 2 || !strings.Contains(errs, tc.want) {
				t.Errorf("exit %d, stderr %q: want exit 2 mentioning %q", code, errs, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was written", out)
			}
		})
	}
}
