//go:build cgo

package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	dpcascade "github.com/plan-dev/plan/dataplane/cascade"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/internal/fixture/servetest"
	"github.com/plan-dev/plan/internal/fixture/tinycascade"
	"github.com/plan-dev/plan/serve/kserve"
	"github.com/plan-dev/plan/serve/worker"
)

// cascadeDeploy adds CascadeServe plans to the test registry (servetest serves PPipe and
// PARD only).
func cascadeDeploy(p *formats.Plan) (*dataplane.Deployment, string, error) {
	if cascadesec.PlanOf(p) != nil {
		d, err := dpcascade.FromPlan(p)
		return d, dpcascade.PolicyGears, err
	}
	return servetest.Deploy(p)
}

var cascadePolicies = servetest.Policies(dpcascade.Policies()...)

func tinyDir() string { return filepath.Join("..", filepath.FromSlash(tinycascade.Dir)) }

func tinyPlan(t testing.TB) *formats.Plan {
	t.Helper()
	p, err := formats.ReadInto[*formats.Plan](filepath.Join(tinyDir(), "plan.json"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestONNXCascade serves the bundled tiny cascade (testdata/cascade/onnx) with onnx workers
// and checks that forwarding follows the real models' outputs: every request is answered by
// the first model of the active gear's cascade whose certainty reaches the gear's threshold
// (or by the last), with that model's probabilities, which equal the Go reference evaluation
// of the same ONNX file; the request bodies of the README answer at the first stage
// (confident.json) and at the last (uncertain.json).
func TestONNXCascade(t *testing.T) {
	needORT(t)
	plan := tinyPlan(t)
	g := cascadesec.PlanOf(plan).Gears[0]
	if len(g.Models) < 2 {
		t.Fatalf("the tiny plan's first gear is %v: want a cascade of at least two models", g.Models)
	}
	for _, gg := range cascadesec.PlanOf(plan).Gears[1:] {
		if strings.Join(gg.Models, ",") != strings.Join(g.Models, ",") || !equalFloats(gg.Thr, g.Thr) {
			t.Fatalf("the tiny plan's gears differ (%v %v vs %v %v): this test expects one cascade at every load", gg.Models, gg.Thr, g.Models, g.Thr)
		}
	}
	models, _, err := tinycascade.LoadAll()
	if err != nil {
		t.Fatal(err)
	}
	_, ts := testServer(t, Options{Plan: plan, Deploy: cascadeDeploy, Policies: cascadePolicies,
		NewExecutor: worker.ONNXFactory(worker.ONNXOptions{Model: tinyDir(), Device: "cpu", Threads: 1})})
	code, body := get(t, ts.URL+"/v2/models/"+tinycascade.Task)
	if code != 200 || !strings.Contains(string(body), `"shape":[-1,32]`) {
		t.Fatalf("metadata: %d %s", code, body)
	}

	// want says which model answers x and with what probabilities.
	want := func(x []float32) (string, []float64, int) {
		for i, m := range g.Models {
			p, err := models[m].Eval(x)
			if err != nil {
				t.Fatal(err)
			}
			if c, _ := tinycascade.Top(p); i == len(g.Models)-1 || c >= g.Thr[i] {
				return m, p, i + 1
			}
		}
		panic("unreachable")
	}
	check := func(name string, body []byte) (answeredBy string) {
		t.Helper()
		var req kserve.InferRequest
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		x, err := req.Inputs[0].Float32s()
		if err != nil {
			t.Fatal(err)
		}
		code, _, resp := post(t, ts.URL+"/v2/models/"+tinycascade.Task+"/infer", string(body))
		if code != 200 {
			t.Fatalf("%s: %d %s", name, code, resp)
		}
		var r kserve.InferResponse
		if err := json.Unmarshal(resp, &r); err != nil {
			t.Fatal(err)
		}
		wm, wp, hops := want(x)
		got, err := r.Outputs[0].Float32s()
		if err != nil {
			t.Fatal(err)
		}
		if r.Outputs[0].Name != tinycascade.OutputName || len(got) != len(wp) {
			t.Fatalf("%s: output %s %v, want %s with %d values", name, r.Outputs[0].Name, got, tinycascade.OutputName, len(wp))
		}
		for i := range got {
			if math.Abs(float64(got[i])-wp[i]) > 1e-4 {
				t.Errorf("%s: output %v, %s in Go gives %v", name, got, wm, wp)
				break
			}
		}
		c, l := tinycascade.Top(wp)
		p := r.Parameters
		if p["answered_by"] != wm || p["hops"] != float64(hops) || p["label"] != float64(l) ||
			math.Abs(p["certainty"].(float64)-c) > 1e-4 || p["stage"] != tinycascade.Task+"/"+wm || len(r.Timing.Stages) != hops {
			t.Errorf("%s: parameters %v after %d hops, want answered_by %s after %d hops (certainty %.6f, label %d)", name, p, len(r.Timing.Stages), wm, hops, c, l)
		}
		return wm
	}
	first, last := g.Models[0], g.Models[len(g.Models)-1]
	for name, wantModel := range map[string]string{"confident.json": first, "uncertain.json": last} {
		b, err := os.ReadFile(filepath.Join(tinyDir(), name))
		if err != nil {
			t.Fatal(err)
		}
		if got := check(name, b); got != wantModel {
			t.Errorf("%s: answered by %s, want %s (the README shows it)", name, got, wantModel)
		}
	}
	// Seeded inputs beyond the validation set: both outcomes occur, and every one is decided
	// by the model's own output.
	by := map[string]int{}
	xs := tinycascade.Inputs(tinycascade.Samples + 40)
	for i, x := range xs[tinycascade.Samples:] {
		b, err := tinycascade.RequestBody("x", x)
		if err != nil {
			t.Fatal(err)
		}
		by[check(fmt.Sprintf("seeded input %d", tinycascade.Samples+i), b)]++
	}
	if by[first] == 0 || by[last] == 0 {
		t.Errorf("answers by model %v: want some at the first stage and some forwarded to the last", by)
	}
	t.Logf("40 seeded inputs answered by %v", by)
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestONNXCascadeBadModels: what --model must hold for a cascade plan, named in the error.
func TestONNXCascadeBadModels(t *testing.T) {
	needORT(t)
	plan := tinyPlan(t)
	copyModels := func(t *testing.T, skip string, replace map[string][]byte) string {
		dir := t.TempDir()
		for _, n := range tinycascade.Names {
			if n == skip {
				continue
			}
			b, err := os.ReadFile(filepath.Join(tinyDir(), n+".onnx"))
			if err != nil {
				t.Fatal(err)
			}
			if r, ok := replace[n]; ok {
				b = r
			}
			if err := os.WriteFile(filepath.Join(dir, n+".onnx"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	g := cascadesec.PlanOf(plan).Gears[0].Models
	for _, tc := range []struct {
		name  string
		model func(t *testing.T) string
		want  string
	}{
		{"missing file", func(t *testing.T) string { return copyModels(t, g[len(g)-1], nil) }, g[len(g)-1] + ".onnx"},
		{"not onnx", func(t *testing.T) string { return copyModels(t, "", map[string][]byte{g[0]: []byte("not a model")}) }, g[0]},
		{"one file for many models", func(t *testing.T) string { return filepath.Join(tinyDir(), g[0]+".onnx") }, "name a directory"},
		{"no such path", func(t *testing.T) string { return filepath.Join(t.TempDir(), "none") }, "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Options{Plan: plan, Deploy: cascadeDeploy, Policies: cascadePolicies,
				NewExecutor: worker.ONNXFactory(worker.ONNXOptions{Model: tc.model(t), Device: "cpu", Threads: 1})})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to name %q", err, tc.want)
			}
		})
	}
}

// TestONNXCascadeAccuracy serves all of the tiny cascade's validation inputs with onnx
// workers and checks the served cascade against the plan: the share of requests forwarded is
// the share the validation records put below the gear's threshold, and the accuracy of the
// answers (against the reference labels) is the gear's expected accuracy — the planner's
// numbers come true when the real models decide.
func TestONNXCascadeAccuracy(t *testing.T) {
	needORT(t)
	if testing.Short() {
		t.Skip("600 requests through ONNX Runtime")
	}
	plan := tinyPlan(t)
	g := cascadesec.PlanOf(plan).Gears[0]
	models, ref, err := tinycascade.LoadAll()
	if err != nil {
		t.Fatal(err)
	}
	xs := tinycascade.Inputs(tinycascade.Samples)
	o, err := tinycascade.Run(models, ref, xs)
	if err != nil {
		t.Fatal(err)
	}
	wantFwd := 0
	for s := range xs {
		if c, _ := tinycascade.Top(o.Probs[g.Models[0]][s]); c < g.Thr[0] {
			wantFwd++
		}
	}
	s, _ := testServer(t, Options{Plan: plan, Deploy: cascadeDeploy, Policies: cascadePolicies,
		NewExecutor: worker.ONNXFactory(worker.ONNXOptions{Model: tinyDir(), Device: "cpu", Threads: 1})})
	type out struct {
		by    string
		label int32
	}
	res := make([]out, len(xs))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, x := range xs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			in := kserve.Float32Tensor(tinycascade.InputName, []int64{1, tinycascade.InputDim}, x)
			// No deadline to miss on a busy test machine: this checks what answers, not when.
			a, err := s.Submit(context.Background(), Request{Model: tinycascade.Task, Input: &in, Deadline: time.Minute})
			if err != nil || a.Status != 200 {
				t.Errorf("sample %d: %v %+v", i, err, a)
				return
			}
			res[i] = out{a.AnsweredBy, a.Result.Label}
		}()
	}
	wg.Wait()
	fwd, right := 0, 0
	for i, r := range res {
		if r.by == g.Models[len(g.Models)-1] {
			fwd++
		}
		if int(r.label) == o.Labels[i] {
			right++
		}
	}
	acc := float64(right) / float64(len(xs))
	t.Logf("%d of %d forwarded (validation records: %d), accuracy %.4f (plan: %.4f)", fwd, len(xs), wantFwd, acc, g.ExpAcc)
	// ONNX Runtime and the Go evaluation may round a certainty within 1e-6 of the threshold
	// differently: allow one sample either way.
	if d := fwd - wantFwd; d < -1 || d > 1 {
		t.Errorf("%d requests forwarded, the validation records say %d", fwd, wantFwd)
	}
	if math.Abs(acc-g.ExpAcc) > 1.5/float64(len(xs)) {
		t.Errorf("served accuracy %.4f, the plan expects %.4f", acc, g.ExpAcc)
	}
}
