package workflow

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/plan-dev/plan/internal/fixture/tinycascade"
	"github.com/plan-dev/plan/profiler/measure"
	"github.com/plan-dev/plan/serve"
	"github.com/plan-dev/plan/serve/kserve"
	"github.com/plan-dev/plan/serve/worker"
)

// The tiny real workflow (testdata/dyorc/onnx): mlp-s routes each request to answer:mlp-l
// (even class) or answer:mlp-m (odd), and the answer's class sends it to review (even) or
// ends it (odd): dataplane/dyorc's Route, class mod the node's candidates.
var onnxDir = filepath.Join("..", "..", "testdata", "dyorc", "onnx")

// modelDir holds the classifiers (written by profiler/onnx.Build with seeded weights,
// internal/fixture/tinycascade).
var modelDir = filepath.Join("..", "..", "testdata", "cascade", "onnx")

func needORT(t *testing.T) {
	t.Helper()
	if err := measure.LibraryAvailable(); err != nil {
		if os.Getenv("PLAN_REQUIRE_ALL") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// expectedPath evaluates the models in Go on x and follows the workflow's routing; ok is
// false when an argmax is too close to call (float32 vs float64 evaluation).
func expectedPath(t *testing.T, models map[string]*tinycascade.Model, x []float32) ([]string, bool) {
	t.Helper()
	label := func(m string) (int, bool) {
		p, err := models[m].Eval(x)
		if err != nil {
			t.Fatal(err)
		}
		q := slices.Clone(p)
		sort.Float64s(q)
		_, l := tinycascade.Top(p)
		return l, q[len(q)-1]-q[len(q)-2] > 1e-4
	}
	r, ok1 := label("mlp-s")
	answer := "mlp-l"
	if r%2 == 1 {
		answer = "mlp-m"
	}
	a, ok2 := label(answer)
	path := []string{"route", "answer:" + answer}
	if a%2 == 0 {
		path = append(path, "review")
	}
	return path, ok1 && ok2
}

// TestONNXWorkflow: with onnx workers the path each request takes is decided by the real
// models' outputs on its input, as the Go evaluation of the same files predicts, over 24
// seeded inputs (both routes and both answer outcomes among them); the bundled request
// bodies take the paths the README shows.
func TestONNXWorkflow(t *testing.T) {
	needORT(t)
	p := readPlan(t, filepath.Join(onnxDir, "plan.json"))
	_, ts := newServer(t, p, serve.Options{NewExecutor: worker.ONNXFactory(worker.ONNXOptions{Model: modelDir, Device: "cpu", Threads: 1})})
	models := map[string]*tinycascade.Model{}
	for _, n := range []string{"mlp-s", "mlp-m", "mlp-l"} {
		b, err := os.ReadFile(filepath.Join(modelDir, n+".onnx"))
		if err != nil {
			t.Fatal(err)
		}
		if models[n], err = tinycascade.Load(b); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(7, 14))
	seen := map[string]bool{}
	checked := 0
	for i := 0; i < 24; i++ {
		x := make([]float32, tinycascade.InputDim)
		for j := range x {
			x[j] = float32(rng.NormFloat64() * tinycascade.InputScale)
		}
		want, ok := expectedPath(t, models, x)
		if !ok {
			continue
		}
		in := kserve.Float32Tensor(tinycascade.InputName, []int64{1, tinycascade.InputDim}, x)
		body, _ := json.Marshal(RunRequest{ID: fmt.Sprint(i), Input: &in})
		code, b := post(t, ts.URL+"/v1/workflows/triage/run", string(body))
		var r RunResponse
		if code != 200 || json.Unmarshal(b, &r) != nil {
			t.Fatalf("input %d: %d %s", i, code, b)
		}
		checkPath(t, r)
		if !slices.Equal(r.Nodes, want) {
			t.Errorf("input %d: path %v, the models' outputs say %v", i, r.Nodes, want)
		}
		seen[fmt.Sprint(want)] = true
		checked++
	}
	if checked < 20 || len(seen) < 3 {
		t.Errorf("%d inputs checked, %d distinct paths (%v): want both routes and both outcomes", checked, len(seen), seen)
	}
	for _, tc := range []struct {
		file string
		want []string
	}{
		{"confident.json", []string{"route", "answer:mlp-l", "review"}},
		{"uncertain.json", []string{"route", "answer:mlp-l"}},
	} {
		b, err := os.ReadFile(filepath.Join(onnxDir, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		code, out := post(t, ts.URL+"/v1/workflows/triage/run", string(b))
		var r RunResponse
		if code != 200 || json.Unmarshal(out, &r) != nil || !slices.Equal(r.Nodes, tc.want) {
			t.Errorf("%s: %d %s, want path %v", tc.file, code, out, tc.want)
		}
	}
}
