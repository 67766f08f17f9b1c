package zoo

import (
	"os"
	"sort"
	"testing"

	"github.com/plan-dev/plan/profiler/graph"
	"github.com/plan-dev/plan/profiler/onnx"
)

// light models are materialized by default; the others spend seconds generating random
// weights, so they run with PLAN_ZOO_ONNX_ALL=1, and scaled-down builds of the same
// architectures (same builders, same operators and attributes) stand in for them.
var light = map[string]bool{"demo": true, "efficientnet-b0": true, "inception-v3": true, "centernet-r18": true, "efficientdet-d1": true}

var scaledDown = map[string]func() (*graph.Graph, error){
	"tiny-bert": func() (*graph.Graph, error) { return bert("tiny-bert", 2, 64, 4, 16) },
	"tiny-fcn":  func() (*graph.Graph, error) { return fcn("tiny-fcn", []int{1, 1, 2, 1}, 8, 64, 128) },
	"tiny-convnext": func() (*graph.Graph, error) {
		return convnext("tiny-convnext", []int64{8, 16, 32, 64}, []int{1, 1, 2, 1}, 64)
	},
	"tiny-nonlocal": func() (*graph.Graph, error) {
		return segmenter("tiny-nonlocal", []int{1, 1, 1, 1}, 8, 64, 128, nlHead(false))
	},
	"tiny-dnl": func() (*graph.Graph, error) {
		return segmenter("tiny-dnl", []int{1, 1, 1, 1}, 8, 64, 128, nlHead(true))
	},
	"tiny-gcnet":  func() (*graph.Graph, error) { return segmenter("tiny-gcnet", []int{1, 1, 1, 1}, 8, 64, 128, gcHead) },
	"tiny-encnet": func() (*graph.Graph, error) { return segmenter("tiny-encnet", []int{1, 1, 1, 1}, 8, 64, 128, encHead) },
	"tiny-apcnet": func() (*graph.Graph, error) { return segmenter("tiny-apcnet", []int{1, 1, 1, 1}, 8, 64, 128, apcHead) },
	"tiny-gfl": func() (*graph.Graph, error) {
		return detector("tiny-gfl", 128, 192, []int{1, 1, 1, 1}, 8, 4, 2, false, 80, 68, 0)
	},
	"tiny-atss": func() (*graph.Graph, error) {
		return detector("tiny-atss", 128, 192, []int{1, 1, 1, 1}, 8, 1, 0, true, 80, 4, 1)
	},
	"tiny-rtmdet": func() (*graph.Graph, error) { return rtmdet("tiny-rtmdet", 0.125, []int{1, 1, 1, 1}, 1, 128) },
}

// TestMaterializeONNX checks that every zoo graph carries enough attributes for profiler/onnx
// to write it as an ONNX model whose shape inference agrees with the zoo's shapes.
func TestMaterializeONNX(t *testing.T) {
	builds := map[string]func() (*graph.Graph, error){}
	for _, name := range Names() {
		if light[name] || os.Getenv("PLAN_ZOO_ONNX_ALL") != "" {
			builds[name] = builders[name]
		}
	}
	for name, f := range scaledDown {
		builds[name] = f
	}
	names := make([]string, 0, len(builds))
	for n := range builds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			g, err := builds[name]()
			if err != nil {
				t.Fatal(err)
			}
			data, err := onnx.Build(g, 1)
			if err != nil {
				t.Fatal(err)
			}
			m, err := onnx.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			back, err := m.Graph(nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(back.Nodes) != len(g.Nodes) {
				t.Fatalf("%d nodes after the round trip, want %d", len(back.Nodes), len(g.Nodes))
			}
			for i, n := range g.Nodes {
				want := g.Tensors[n.Outputs[0]].Shape
				got := back.Tensors[back.Nodes[i].Outputs[0]].Shape
				if len(got) != len(want) {
					t.Fatalf("node %s: shape %v after the round trip, want %v", n.Name, got, want)
				}
				for j := range got {
					if got[j] != want[j] {
						t.Fatalf("node %s: shape %v after the round trip, want %v", n.Name, got, want)
					}
				}
			}
		})
	}
}
