//go:build cgo

package onnx_test

import (
	"context"
	"os"
	"reflect"
	"testing"

	"github.com/plan-dev/plan/profiler/graph"
	"github.com/plan-dev/plan/profiler/measure"
	"github.com/plan-dev/plan/profiler/onnx"
)

// needORT skips a test when ONNX Runtime cannot be loaded, unless PLAN_REQUIRE_ALL=1 (CI),
// where a missing library is a failure (the pattern of profiler/measure's tests).
func needORT(t testing.TB) {
	t.Helper()
	if err := measure.Available(); err != nil {
		if os.Getenv("PLAN_REQUIRE_ALL") == "1" {
			t.Fatalf("PLAN_REQUIRE_ALL=1 and ONNX Runtime is unavailable: %v", err)
		}
		t.Skipf("ONNX Runtime unavailable: %v", err)
	}
}

// TestORTDetectionOps runs models with Resize, ConvTranspose, Slice and Pad through ONNX
// Runtime: the writer's FPN (as built, and rebuilt from its parsed graph) and the
// exporter-style detection head. ONNX Runtime must accept each model, profile it with
// profiler/measure, and produce every output in the shape inference gave it.
func TestORTDetectionOps(t *testing.T) {
	needORT(t)
	fpn := onnx.FPN()
	built, err := onnx.Build(fpn, 1)
	if err != nil {
		t.Fatal(err)
	}
	parse := func(data []byte) *graph.Graph {
		t.Helper()
		m, err := onnx.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		g, err := m.Graph(nil)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	rebuilt, err := onnx.Build(parse(built), 2)
	if err != nil {
		t.Fatal(err)
	}
	detect := onnx.DetectStyle()
	cases := []struct {
		name  string
		model []byte
		g     *graph.Graph
	}{
		{"fpn", built, fpn},
		{"fpn rebuilt", rebuilt, parse(rebuilt)},
		{"detect style", detect, parse(detect)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := measure.Run(context.Background(), measure.Options{
				Model: c.model, Graph: c.g, Warmup: 1, MinRepeats: 3, MaxRepeats: 3, Threads: 1,
			})
			if err != nil {
				t.Fatalf("measure: %v", err)
			}
			if len(r.Layers) != len(c.g.Nodes) {
				t.Errorf("%d layers timed, want %d", len(r.Layers), len(c.g.Nodes))
			}
			const batch = 2
			s, err := measure.NewSession(c.name, c.model, c.g.Inputs, c.g.Outputs, "cpu", 1)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var in []measure.FloatTensor
			for _, name := range c.g.Inputs {
				shape := append([]int64{batch}, c.g.Tensors[name].Shape...)
				in = append(in, measure.FloatTensor{Shape: shape, Data: make([]float32, graph.Elements(shape))})
			}
			out, err := s.Run(in)
			if err != nil {
				t.Fatal(err)
			}
			for i, name := range c.g.Outputs {
				want := append([]int64{batch}, c.g.Tensors[name].Shape...)
				if !reflect.DeepEqual(out[i].Shape, want) {
					t.Errorf("output %q: ONNX Runtime gives %v, inference %v", name, out[i].Shape, want)
				}
			}
		})
	}
}
