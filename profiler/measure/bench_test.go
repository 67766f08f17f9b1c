package measure

import (
	"context"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/profiler/graph"
	"github.com/plan-dev/plan/profiler/onnx/onnxtest"
	"github.com/plan-dev/plan/profiler/zoo"
)

// evenBlocks cuts g into n blocks of about equal node count (the benchmark needs blocks, not
// a good partition).
func evenBlocks(g *graph.Graph, n int) []formats.Block {
	var cuts []int
	for i := 1; i < n; i++ {
		cuts = append(cuts, i*len(g.Nodes)/n)
	}
	return blocks(cuts, len(g.Nodes))
}

// benchProfile measures a full profile (per-layer pass, 10 blocks + whole model, batch 1)
// once per iteration, the work `plan profile` does for one batch size.
func benchProfile(b *testing.B, g *graph.Graph, repeats int) {
	needORT(b)
	data := build(b, g)
	opts := Options{Model: data, Graph: g, Blocks: evenBlocks(g, 10), Batches: []int{1}, Warmup: 1, MinRepeats: repeats, MaxRepeats: repeats}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := Run(context.Background(), opts)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(r.Measurements[0].Total.MedianUs/1e3, "model-ms")
	}
}

// BenchmarkProfileDemo profiles the embedded demo CNN (zoo "demo") on the CPU.
func BenchmarkProfileDemo(b *testing.B) {
	g, err := zoo.Build("demo")
	if err != nil {
		b.Fatal(err)
	}
	benchProfile(b, g, 3)
}

// BenchmarkProfileSmallCNN profiles the test CNN at 64×64, where session overheads matter.
func BenchmarkProfileSmallCNN(b *testing.B) {
	benchProfile(b, onnxtest.CNN(32, 64), 10)
}
