package measure

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/internal/base/quantile"
	"github.com/plan-dev/plan/profiler/graph"
	"github.com/plan-dev/plan/profiler/onnx/onnxtest"
)

var update = flag.Bool("update", false, "regenerate the ONNX Runtime trace fixture (needs the library) and the golden attribution")

var (
	traceFixture = filepath.Join("..", "..", "testdata", "onnx", "ort_profile_cnn.json")
	traceGolden  = filepath.Join("..", "..", "testdata", "onnx", "ort_profile_cnn.golden.json")
)

// fixtureGraph is the model the trace fixture was recorded on.
var fixtureGraph = func() *graph.Graph { return onnxtest.CNN(16, 32) }

// keepEvents strips a trace to the events the parser reads (kernels and runs), so the
// fixture stays small.
func keepEvents(t *testing.T, data []byte) []byte {
	var evs []map[string]any
	if err := json.Unmarshal(data, &evs); err != nil {
		t.Fatal(err)
	}
	var kept []map[string]any
	for _, e := range evs {
		name, _ := e["name"].(string)
		if strings.HasSuffix(name, kernelSuffix) || name == "model_run" {
			if args, ok := e["args"].(map[string]any); ok {
				// Thread statistics vary run to run and are not read.
				delete(args, "thread_scheduling_stats")
			}
			kept = append(kept, e)
		}
	}
	out, err := json.MarshalIndent(kept, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// TestTraceGolden maps a recorded ONNX Runtime trace (NCHWc layout: fused Conv+BN+Relu
// kernels named after the last layer's output) onto the CNN's layers.
func TestTraceGolden(t *testing.T) {
	g := fixtureGraph()
	if *update {
		needORT(t)
		var raw []byte
		traceHook = func(b []byte) { raw = b }
		defer func() { traceHook = nil }()
		if _, err := Run(context.Background(), quick(Options{Model: build(t, g), Graph: g})); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(traceFixture, keepEvents(t, raw), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(traceFixture)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := ParseTrace(data)
	if err != nil {
		t.Fatal(err)
	}
	layers, unattr, run := tr.Attribute(g, 1)
	got, err := json.MarshalIndent(struct {
		Layers         []LayerTime `json:"layers"`
		UnattributedUs float64     `json:"unattributed_us"`
		RunUs          float64     `json:"run_us"`
	}{layers, unattr, run}, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.WriteFile(traceGolden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(traceGolden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("attribution differs from %s (run with -update after checking):\n%s", traceGolden, got)
	}
	// Invariants that hold for any trace: every layer has a kernel, and layer times plus
	// unattributed time add up to the kernel times.
	var sumLayers, sumKernels float64
	for _, l := range layers {
		if l.Kernel == "" || l.Us <= 0 {
			t.Errorf("layer %+v: not timed", l)
		}
		sumLayers += l.Us
	}
	for _, k := range tr.Order {
		sumKernels += quantile.Of(steady(tr.Kernels[k], 1), 50)
	}
	if d := sumLayers + unattr - sumKernels; d > 1e-6 || d < -1e-6 {
		t.Errorf("layers %.3f + unattributed %.3f != kernels %.3f", sumLayers, unattr, sumKernels)
	}
}

func TestMatchLayer(t *testing.T) {
	names := []string{"Conv_10", "Conv_1", "Relu_3.out", "Relu_3", "/layer1/conv1/Conv"}
	index := map[string]int{"Conv_1": 0, "Conv_10": 1, "Relu_3": 2, "Relu_3.out": 2, "/layer1/conv1/Conv": 3}
	cases := []struct {
		ort  string
		want int
	}{
		{"Conv_1", 0}, {"Conv_10", 1}, {"fused Conv_1", 0}, {"Conv_1_token_7", 0},
		{"Relu_3.out_nchwc", 2}, {"Conv_100", -1}, {"ReorderInput", -1},
		{"/layer1/conv1/Conv_output_0_nchwc", 3}, {"XConv_1", -1},
	}
	for _, c := range cases {
		got, ok := matchLayer(c.ort, index, names)
		if !ok {
			got = -1
		}
		if got != c.want {
			t.Errorf("matchLayer(%q) = %d, want %d", c.ort, got, c.want)
		}
	}
}

func TestParseTraceErrors(t *testing.T) {
	for _, in := range []string{``, `{}`, `[]`, `[{"cat":"Session","name":"model_run","dur":5}]`, `[{"cat":"Node","name":"a_kernel_time","dur":-1}]`} {
		if _, err := ParseTrace([]byte(in)); err == nil {
			t.Errorf("ParseTrace(%q): no error", in)
		}
	}
}

func FuzzParseTrace(f *testing.F) {
	if data, err := os.ReadFile(traceFixture); err == nil {
		f.Add(data)
	}
	f.Add([]byte(`[{"cat":"Node","name":"Conv_1_kernel_time","dur":12,"args":{"op_name":"Conv"}},{"cat":"Session","name":"model_run","dur":20}]`))
	f.Add([]byte(`[{"cat":"Node","name":"_kernel_time","dur":0}]`))
	g := fixtureGraph()
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ParseTrace(data)
		if err != nil {
			return
		}
		layers, _, _ := tr.Attribute(g, 1)
		if len(layers) != len(g.Nodes) {
			t.Fatalf("%d layers for %d nodes", len(layers), len(g.Nodes))
		}
		for _, l := range layers {
			if l.Us < 0 || l.Us != l.Us {
				t.Fatalf("layer %+v: bad time", l)
			}
		}
	})
}

// TestAttributeFusions covers the kernel names ONNX Runtime produces for fused layers, with
// synthetic traces (one run each, no warm-up).
func TestAttributeFusions(t *testing.T) {
	ev := func(name, op string, dur float64) string {
		return fmt.Sprintf(`{"cat":"Node","name":%q,"dur":%g,"args":{"op_name":%q}}`, name+kernelSuffix, dur, op)
	}
	tf := onnxtest.Transformer(100, 32, 2, 8)
	mlp := onnxtest.MLP(8, 16, 4)
	cases := []struct {
		name   string
		g      *graph.Graph
		events []string
		// want maps a layer to the kernel it must be attributed to.
		want   map[string]string
		unattr float64
	}{
		{"gemm+relu named after the gemm", mlp,
			[]string{ev("fused Gemm_1", "FusedGemm", 10), ev("ReorderInput", "ReorderInput", 3)},
			map[string]string{"Gemm_1": "fused Gemm_1", "Relu_2": "fused Gemm_1"}, 3},
		{"matmul+add fusion", mlp,
			[]string{ev("fused MatMul_3/MatMulAddFusion", "FusedGemm", 10)},
			map[string]string{"MatMul_3": "fused MatMul_3/MatMulAddFusion", "Add_4": "fused MatMul_3/MatMulAddFusion"}, 0},
		{"skip layer norm", tf,
			[]string{ev("MatMul_17", "MatMul", 10), ev("SkipLayerNormalization", "SkipLayerNormalization", 4)},
			map[string]string{"MatMul_17": "MatMul_17", "Add_18": "SkipLayerNormalization", "LayerNormalization_19": "SkipLayerNormalization"}, 0},
		{"nchwc conv named after the relu output", fixtureGraph(),
			[]string{ev("Relu_3.out_nchwc", "Conv", 12), ev("Relu_5.out_nchwc", "Conv", 20)},
			map[string]string{"Conv_1": "Relu_3.out_nchwc", "BatchNormalization_2": "Relu_3.out_nchwc", "Relu_3": "Relu_3.out_nchwc", "Conv_4": "Relu_5.out_nchwc"}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, err := ParseTrace([]byte("[" + strings.Join(c.events, ",") + "]"))
			if err != nil {
				t.Fatal(err)
			}
			layers, unattr, _ := tr.Attribute(c.g, 0)
			byName := map[string]LayerTime{}
			var sum float64
			for _, l := range layers {
				byName[l.Name] = l
				sum += l.Us
			}
			for layer, kernel := range c.want {
				if got := byName[layer]; got.Kernel != kernel || got.Us <= 0 {
					t.Errorf("layer %s: %+v, want kernel %q and a positive time", layer, got, kernel)
				}
			}
			if unattr != c.unattr {
				t.Errorf("unattributed %g, want %g", unattr, c.unattr)
			}
			var kernels float64
			for _, k := range tr.Order {
				kernels += tr.Kernels[k][0]
			}
			if d := sum + unattr - kernels; d > 1e-9 || d < -1e-9 {
				t.Errorf("layers %g + unattributed %g != kernels %g", sum, unattr, kernels)
			}
		})
	}
}

// TestAttributeSubResolutionKernel: a kernel ONNX Runtime's profiler timed at 0 µs (its
// events carry whole µs; a 10-way softmax runs in well under one) ran all the same: its
// layers get half the resolution between them, never 0.
func TestAttributeSubResolutionKernel(t *testing.T) {
	ev := `{"cat":"Node","name":"fused Gemm_1` + kernelSuffix + `","dur":0,"args":{"op_name":"FusedGemm"}}`
	tr, err := ParseTrace([]byte("[" + ev + "]"))
	if err != nil {
		t.Fatal(err)
	}
	layers, _, _ := tr.Attribute(onnxtest.MLP(8, 16, 4), 0)
	var sum float64
	for _, l := range layers {
		if l.Kernel == "fused Gemm_1" {
			if l.Us <= 0 {
				t.Errorf("layer %s: %g µs, want a positive time", l.Name, l.Us)
			}
			sum += l.Us
		}
	}
	if math.Abs(sum-subResolutionUs) > 1e-9 {
		t.Errorf("the kernel's layers got %g µs, want %g", sum, subResolutionUs)
	}
}
