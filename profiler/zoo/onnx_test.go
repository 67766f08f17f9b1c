package zoo

import (
	"os"
	"testing"

	"github.com/plan-dev/plan/profiler/onnx"
)

// heavy models spend most of this test generating random weights (100M+ parameters); their
// operators are all covered by the lighter ones, so they run only with PLAN_ZOO_ONNX_ALL=1.
var heavy = map[string]bool{"bert-large": true, "convnext-l": true, "efficientnet-b8": true, "repvgg-b3": true, "wide-resnet101-2": true, "resnet101": true}

// TestMaterializeONNX checks that every zoo graph carries enough attributes for profiler/onnx
// to write it as an ONNX model whose shape inference agrees with the zoo's shapes.
func TestMaterializeONNX(t *testing.T) {
	for _, name := range Names() {
		if heavy[name] && os.Getenv("PLAN_ZOO_ONNX_ALL") == "" {
			continue
		}
		if testing.Short() && name != "demo" && name != "efficientnet-b0" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			g, err := Build(name)
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
