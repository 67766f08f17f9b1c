package cli

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/internal/base/testmode"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/internal/run/predict"
	"github.com/plan-dev/plan/planner/schedule"
)

// propertyCase is one system's bundled inputs whose workload rates the property test draws.
type propertyCase struct {
	system  string
	profile string // "" = none (DyOrc's workload carries its services)
	cluster string
	work    string
	extra   []string
}

var propertyCases = []propertyCase{
	{"ppipe (cost)", "testdata/ppipe/profile.json", "testdata/cost/cluster-priced.yaml", "testdata/cost/workload.yaml", []string{"--objective", "cost"}},
	{"pard", "testdata/pard/profile.json", "testdata/pard/cluster.json", "testdata/pard/workload.json", nil},
	{"qlm", "testdata/qlm/profile.json", "testdata/qlm/cluster.yaml", "testdata/qlm/workload.yaml", nil},
	{"dyorc", "", "testdata/dyorc/cluster-small.json", "testdata/dyorc/small.json", nil},
	{"cascade (cost)", "testdata/cascade/profile.json", "testdata/cost/cluster-cascade.yaml", "testdata/cascade/workload-small.yaml", []string{"--objective", "cost"}},
}

// verdictProperty solves one drawn case of c and returns what happened and what it found
// wrong ("" = nothing).
func verdictProperty(t testing.TB, reg *systems.Registry, c propertyCase, seed uint64, dir string) (outcome, violation string) {
	t.Helper()
	w, err := formats.ReadInto[*formats.Workload](c.work, intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	// Each stated rate times a factor drawn in [0.3, 1.7): workloads lighter and heavier
	// than the bundled one, on the same profiles and cluster.
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	names, rates := predict.RatedTargets(w)
	for i := range rates {
		rates[i] *= 0.3 + 1.4*r.Float64()
	}
	if len(names) > 0 {
		if w, err = schedule.WithRates(w, names, rates); err != nil {
			t.Fatal(err)
		}
	}
	wpath := filepath.Join(dir, "workload-"+strconv.FormatUint(seed, 10)+".json")
	if err := formats.WriteFile(wpath, w, intree.Sections()); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "plan-"+strconv.FormatUint(seed, 10)+".json")
	args := []string{"solve", "-q", "--deterministic", "--time-limit", "20s", "--cluster", c.cluster, "--workload", wpath, "-o", out}
	if c.profile != "" {
		args = append(args, "--profile", c.profile)
	}
	code, stderr := runTB(append(args, c.extra...)...)
	if tt, ok := t.(*testing.T); ok {
		skipWithoutHiGHS(tt, stderr)
	}
	switch code {
	case ExitOK:
	case ExitUsage:
		// Infeasible or a miss: a cluster with twice the GPUs must be solved.
		big := filepath.Join(dir, "cluster-"+strconv.FormatUint(seed, 10)+".json")
		cl, err := formats.ReadInto[*formats.Cluster](c.cluster, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range cl.GPUs {
			cl.GPUs[i].Count *= 2
			if a := cl.GPUs[i].Available; a != nil {
				twice := 2 * *a
				cl.GPUs[i].Available = &twice
			}
		}
		if err := formats.WriteFile(big, cl, intree.Sections()); err != nil {
			t.Fatal(err)
		}
		for i, a := range args {
			if a == c.cluster {
				args[i] = big
			}
		}
		if code, stderr2 := runTB(append(args, c.extra...)...); code != ExitOK {
			return "exit 2", "solve said no (" + firstLine(stderr) + ") and on twice the GPUs exits " + strconv.Itoa(code) + ": " + firstLine(stderr2)
		}
		return "exit 2, solved on 2× GPUs", ""
	default:
		return "", "solve exit " + strconv.Itoa(code) + ": " + firstLine(stderr)
	}
	plan, err := formats.ReadInto[*formats.Plan](out, reg.Sections())
	if err != nil {
		t.Fatal(err)
	}
	pr := plan.Prediction
	if pr == nil {
		return "", "the plan records no prediction"
	}
	// An independent run (other arrivals): every application the plan says meets its
	// target must hold it within the two runs' sampling errors.
	again, err := predict.PlanSeed(context.Background(), reg, plan, 1000+int64(seed))
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range pr.Apps {
		b := again.Apps[i]
		if a.Meets && b.Attainment < a.Target-(a.Margin+b.Margin) {
			return "written", a.Name + ": predicted " + run.Pct(a.Attainment) + " ± " + run.Pct(a.Margin) + ", an independent run " + run.Pct(b.Attainment) + " ± " + run.Pct(b.Margin) + " against " + run.Pct(a.Target)
		}
		if pr.Basis == formats.PredictionBasisRates && !a.Meets {
			return "written", a.Name + ": solve wrote a plan that misses at the workload's rates without --accept-miss"
		}
	}
	return "written", ""
}

// runTB runs plan in-process (for tests and benchmarks alike) and returns its exit code and
// stderr.
func runTB(args ...string) (int, string) {
	var out, errb bytes.Buffer
	code := Run(args, Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, errb.String()
}

// TestVerdictProperty: for each system, seeded random workloads (the bundled rates times
// factors in [0.3, 1.7)) are solved; whenever solve writes a plan, an independent simulation
// (other arrivals) meets every target the prediction says is met, within the two runs'
// sampling errors, and no plan that misses at the workload's rates is written; whenever solve
// says no, the same workload on twice the GPUs is solved. PLAN_PROPERTY_CASES sets the cases
// per system (default 1 in CI, 4 under make test-full; BenchmarkVerdictProperty runs many).
func TestVerdictProperty(t *testing.T) {
	repoRoot(t)
	n := 1
	if testmode.Full() {
		n = 4
	}
	if s := os.Getenv("PLAN_PROPERTY_CASES"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			t.Fatalf("PLAN_PROPERTY_CASES=%q: want a count >= 1", s)
		}
	}
	reg := systems.Default()
	for _, c := range propertyCases {
		t.Run(c.system, func(t *testing.T) {
			dir := t.TempDir()
			for seed := uint64(1); seed <= uint64(n); seed++ {
				outcome, v := verdictProperty(t, reg, c, seed, dir)
				t.Logf("seed %d: %s", seed, outcome)
				if v != "" {
					t.Errorf("seed %d: %s", seed, v)
				}
			}
		})
	}
}

// BenchmarkVerdictProperty is the property test at scale: b.N seeded cases per system,
// reporting the violation rate (target 0) and the share of cases solve wrote a plan for.
// PLAN_PROPERTY_FIRST_SEED (default 1) starts the seeds elsewhere, so that thousands of
// cases can run as separate chunks (seeds 1–1000, then 1001–2000) and add up.
func BenchmarkVerdictProperty(b *testing.B) {
	b.Chdir(filepath.Join("..", "..", "..", ".."))
	first := uint64(1)
	if s := os.Getenv("PLAN_PROPERTY_FIRST_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil || v < 1 {
			b.Fatalf("PLAN_PROPERTY_FIRST_SEED=%q: want a seed >= 1", s)
		}
		first = v
	}
	reg := systems.Default()
	for _, c := range propertyCases {
		b.Run(c.system, func(b *testing.B) {
			dir := b.TempDir()
			violations, written := 0, 0
			for i := range b.N {
				seed := first + uint64(i)
				outcome, v := verdictProperty(b, reg, c, seed, dir)
				if v != "" {
					violations++
					b.Logf("seed %d: %s", seed, v)
				}
				if outcome == "written" {
					written++
				}
			}
			b.ReportMetric(float64(violations)/float64(b.N), "violations/case")
			b.ReportMetric(math.Round(100*float64(written)/float64(b.N)), "written%")
		})
	}
}

// BenchmarkPredictionVsLongRun: every golden plan's prediction (its recorded span) against a
// simulation 10× as long with other arrivals; reports the largest attainment difference over
// the plans' applications, in points (target: within 1).
func BenchmarkPredictionVsLongRun(b *testing.B) {
	b.Chdir(filepath.Join("..", "..", "..", ".."))
	reg := systems.Default()
	plans, err := filepath.Glob(filepath.Join("testdata", "golden", "*.json"))
	if err != nil || len(plans) == 0 {
		b.Fatalf("no golden plans: %v", err)
	}
	for range b.N {
		worst := 0.0
		for _, path := range plans {
			plan, err := formats.ReadInto[*formats.Plan](path, reg.Sections())
			if err != nil {
				b.Fatal(err)
			}
			short, err := predict.Plan(context.Background(), reg, plan)
			if err != nil {
				b.Fatal(err)
			}
			long, err := predict.PlanWith(context.Background(), reg, plan, 7, 10)
			if err != nil {
				b.Fatal(err)
			}
			for i, a := range short.Apps {
				d := 100 * math.Abs(a.Attainment-long.Apps[i].Attainment)
				worst = max(worst, d)
				b.Logf("%s %s: %.2f%% (%.0f s) vs %.2f%% (%.0f s): %.2f points", filepath.Base(path), a.Name,
					100*a.Attainment, short.DurationS, 100*long.Apps[i].Attainment, long.DurationS, d)
			}
		}
		b.ReportMetric(worst, "max-diff-points")
	}
}

// firstLine is s up to its first newline, " …" marking the rest.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}
