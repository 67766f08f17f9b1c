package vllmruns

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/internal/run/replay"
	"github.com/plan-dev/plan/profiler/kerneltab"
	"github.com/plan-dev/plan/sim"
)

var update = flag.Bool("update", false, "refit the host overhead into profiler/llm/fitted_overhead.go and rewrite testdata/baseline.json")

// replayer is `plan simulate --llm`'s replay, as the CLI hands it down.
func replayer() Replayer {
	reg := systems.Default()
	return func(_ context.Context, prof formats.LLMProfile, name string, t *formats.Trace) ([]sim.RequestRecord, error) {
		return replay.Records(reg, prof, name, t)
	}
}

func bundled(t *testing.T) []Run {
	t.Helper()
	name, data := EmbeddedRuns()
	runs, err := ReadRuns(name, data)
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// TestFitCorrections: with -update, refits the step model's corrections on the bundled runs
// (every run at every candidate: minutes) and rewrites profiler/llm/fitted_corrections.go;
// without it, the file must exist and name its fit (the bench's baseline holds the
// predictions to it).
func TestFitCorrections(t *testing.T) {
	path := filepath.Join("..", "..", "profiler", "llm", "fitted_corrections.go")
	if !*update {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(src), "TestFitCorrections -update") {
			t.Fatalf("%s: not written by the fit", path)
		}
		t.Skip("the fit replays every run at every candidate: run with -update to refit")
	}
	fit, err := FitCorrections(context.Background(), bundled(t), replayer(), 1, Grid(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fit %+v", fit)
	if err := os.WriteFile(path, []byte(FittedCorrectionsSource(fit)), 0o644); err != nil {
		t.Fatal(err)
	}
	vpath := filepath.Join("..", "..", "profiler", "llm", "validation_errors.go")
	if err := os.WriteFile(vpath, []byte(ValidationSource(fit, kernelTablesLOO(t))), 0o644); err != nil {
		t.Fatal(err)
	}
}

// kernelTablesLOO are every measured GPU's kernel-table leave-one-out medians: the worst of
// GEMM and decode attention (every fifth LLM-shaped node, as TestLeaveOneOut) and the fused
// MoE table's BF16 shapes predicted from the other models' (what an unmeasured MoE model
// reads).
func kernelTablesLOO(t *testing.T) map[string][2]float64 {
	out := map[string][2]float64{}
	for _, g := range kerneltab.GPUs() {
		tb, err := kerneltab.Load(g)
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for _, table := range []string{kerneltab.TableGEMM, kerneltab.TableGenAttn} {
			worst = max(worst, tb.LeaveOneOut(table, 5, kerneltab.LLMShapes(table)).MedianPct)
		}
		moe, _, n := tb.MoEShapeLOO(kerneltab.BF16, 16384)
		if n == 0 {
			moe = 0
		}
		out[strings.ToUpper(g)] = [2]float64{round2(worst), round2(moe)}
	}
	return out
}
