package roofline

import (
	"math"
	"reflect"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/profiler/gpus"
	"github.com/plan-dev/plan/profiler/graph"
	"github.com/plan-dev/plan/profiler/partition"
	"github.com/plan-dev/plan/profiler/zoo"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestLayerUsHandComputed checks the formula on the P4 (flat efficiency) with layers whose
// bound is known.
func TestLayerUsHandComputed(t *testing.T) {
	e, err := NewEstimator("P4", "")
	if err != nil {
		t.Fatal(err)
	}
	p := e.Params
	peak := 5.5e6 // FLOPs/µs
	bw := 192e3   // bytes/µs
	l2 := float64(2 << 20)
	mem := func(bytes float64) float64 {
		hit := l2 / (l2 + bytes)
		return bytes / (p.EtaMem * bw) * (1 - hit*(1-1/p.L2Boost))
	}
	// Compute-bound: 1 GFLOP, 1 MB of traffic, full occupancy.
	big := Layer{Kind: KindCompute, FLOPs: 1e9, W: 5e5, A: 5e5}
	want := 1e9/(p.EtaCompute*peak) + p.OverheadUs
	if got := e.LayerUs(big, 1); !near(got, want) {
		t.Errorf("compute-bound: %v µs, want %v", got, want)
	}
	// Batch 4 does 4× the work.
	want4 := 4e9/(p.EtaCompute*peak) + p.OverheadUs
	if got := e.LayerUs(big, 4); !near(got, want4) {
		t.Errorf("compute-bound b=4: %v µs, want %v", got, want4)
	}
	// Memory-bound: 1 MFLOP over 64 MB.
	thin := Layer{Kind: KindCompute, FLOPs: 1e6, W: 0, A: 64e6}
	if got, want := e.LayerUs(thin, 1), mem(64e6)+p.OverheadUs; !near(got, want) {
		t.Errorf("memory-bound: %v µs, want %v", got, want)
	}
	// Under-occupied: 1 kFLOP runs at the rate of a partly filled GPU.
	tiny := Layer{Kind: KindCompute, FLOPs: 1e3}
	occ := 1e3 / (20 * p.PhiFLOPs)
	if got, want := e.LayerUs(tiny, 1), 1e3/(p.EtaCompute*peak*occ)+p.OverheadUs; !near(got, want) {
		t.Errorf("under-occupied: %v µs, want %v", got, want)
	}
	// Fused epilogues pay only their extra traffic; views are free.
	if got, want := e.LayerUs(Layer{Kind: KindFused, A: 1e6}, 2), mem(2e6); !near(got, want) {
		t.Errorf("fused: %v, want %v", got, want)
	}
	if got := e.LayerUs(Layer{Kind: KindView, A: 1e9}, 8); got != 0 {
		t.Errorf("view: %v, want 0", got)
	}
}

func TestLayersFusion(t *testing.T) {
	g, err := zoo.Build("resnet50")
	if err != nil {
		t.Fatal(err)
	}
	ls := Layers(g)
	kinds := map[string]int{}
	for i, n := range g.Nodes {
		kinds[n.Op+"/"+[]string{"compute", "fused", "view"}[ls[i].Kind]]++
	}
	// Every ReLU and residual Add follows a convolution (or its epilogue) in ResNet.
	want := map[string]int{"Conv/compute": 53, "Relu/fused": 49, "Add/fused": 16, "MaxPool/compute": 1,
		"GlobalAveragePool/compute": 1, "Flatten/view": 1, "Gemm/compute": 1}
	if !reflect.DeepEqual(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	// The residual Add reads the skip tensor as extra traffic.
	for i, n := range g.Nodes {
		if n.Op == "Add" && ls[i].A <= 0 {
			t.Errorf("%s: fused Add with no extra bytes", n.Name)
		}
	}
}

func TestProfileGridSlicesNoise(t *testing.T) {
	g, err := zoo.Build("inception-v3")
	if err != nil {
		t.Fatal(err)
	}
	mp, err := Profile(g, Options{GPUs: []string{"L4", "P4"}, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	// PPipe's grid: 16 points on L4, 8 on P4 (whole GPUs only).
	if len(mp.Latency) != 24 {
		t.Fatalf("%d entries", len(mp.Latency))
	}
	e, f := mustLookup(t, mp, "L4", 1, 1), mustLookup(t, mp, "L4", 2, 1)
	est, _ := NewEstimator("L4", "")
	for i := range e.BlockUs {
		// Rounding to ns aside, a 1/2 slice is exactly v·κ₂ × the whole GPU.
		if r := f.BlockUs[i] / e.BlockUs[i]; math.Abs(r-est.SliceFactor(2)) > 1e-3 {
			t.Errorf("block %d: slice ratio %v, want %v", i, r, est.SliceFactor(2))
		}
	}
	// Latency grows with batch on every block.
	for b := 2; b <= 8; b++ {
		lo, hi := mustLookup(t, mp, "P4", 1, b-1), mustLookup(t, mp, "P4", 1, b)
		for i := range lo.BlockUs {
			if hi.BlockUs[i] <= lo.BlockUs[i] {
				t.Errorf("P4 block %d: b=%d %v <= b=%d %v", i, b, hi.BlockUs[i], b-1, lo.BlockUs[i])
			}
		}
	}
	// The noise is deterministic per seed and bounded.
	n1, n2, n3 := Noise(3, "m", "L4", 10, 0.03), Noise(3, "m", "L4", 10, 0.03), Noise(4, "m", "L4", 10, 0.03)
	if !reflect.DeepEqual(n1, n2) || reflect.DeepEqual(n1, n3) {
		t.Error("noise: not a deterministic function of the seed")
	}
	for _, x := range n1 {
		if x < 0.97 || x > 1.03 {
			t.Errorf("noise %v outside ±3%%", x)
		}
	}
	if _, err := Profile(g, Options{GPUs: []string{"TPU"}}); err == nil {
		t.Error("unknown GPU: want an error")
	}
	if _, err := NewEstimator("L4", gpus.Precision("int4")); err == nil {
		t.Error("unknown precision: want an error")
	}
}

func mustLookup(t *testing.T, mp *formats.ModelProfile, gpu string, v, b int) *formats.LatencyEntry {
	t.Helper()
	e, ok := mp.Lookup(gpu, v, b)
	if !ok {
		t.Fatalf("no entry %s v%d b%d", gpu, v, b)
	}
	return e
}

func TestPPipeGrid(t *testing.T) {
	if got := len(PPipeGrid(4)); got != 16 {
		t.Errorf("PPipeGrid(4): %d points, want 16", got)
	}
	if got := PPipeGrid(1); len(got) != 8 || got[7] != (Point{1, 8}) {
		t.Errorf("PPipeGrid(1) = %v", got)
	}
}

// BenchmarkZooAllGPUs profiles every zoo model on all 8 GPU types (target: < 1 s in total).
func BenchmarkZooAllGPUs(b *testing.B) {
	var graphs []*graph.Graph
	for _, n := range zoo.Names() {
		g, err := zoo.Build(n)
		if err != nil {
			b.Fatal(err)
		}
		graphs = append(graphs, g)
	}
	all := gpus.Names()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, g := range graphs {
			if _, err := Profile(g, Options{GPUs: all}); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestGenerationsOrdered is a sanity check on the uncalibrated GPUs: on every zoo model at
// batch 8, a newer part of the same line is faster (T4 < P4, A10 < T4, A100 < V100,
// H100 < A100, H200 ≤ H100).
func TestGenerationsOrdered(t *testing.T) {
	pairs := [][2]string{{"T4", "P4"}, {"A10", "T4"}, {"A100", "V100"}, {"H100", "A100"}, {"H200", "H100"}}
	for _, name := range zoo.Names() {
		g, err := zoo.Build(name)
		if err != nil {
			t.Fatal(err)
		}
		mp, err := Profile(g, Options{GPUs: gpus.Names(), DefaultGrid: []Point{{1, 8}}, Noise: -1})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pairs {
			newer, older := mustLookup(t, mp, p[0], 1, 8).WholeUs(), mustLookup(t, mp, p[1], 1, 8).WholeUs()
			if newer > older*1.0001 {
				t.Errorf("%s b=8: %s %.2f ms slower than %s %.2f ms", name, p[0], newer/1000, p[1], older/1000)
			}
		}
	}
}

func TestProfileGivenPartition(t *testing.T) {
	g, err := zoo.Build("resnet50")
	if err != nil {
		t.Fatal(err)
	}
	first, err := Profile(g, Options{GPUs: []string{"L4"}, Blocks: 4, Method: "greedy"})
	if err != nil {
		t.Fatal(err)
	}
	if first.Partition.Method != "greedy" || first.Partition.ReferenceGPU != "L4" || len(first.Blocks) > 4 {
		t.Fatalf("partition %+v, %d blocks", first.Partition, len(first.Blocks))
	}
	part := &partition.Result{Blocks: first.Blocks, CutBytes: first.CutBytes, Info: *first.Partition}
	again, err := Profile(g, Options{GPUs: []string{"P4"}, Partition: part})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.Blocks, first.Blocks) || !reflect.DeepEqual(again.CutBytes, first.CutBytes) {
		t.Fatal("a given partition was not kept")
	}
}
