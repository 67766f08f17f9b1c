package measure

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/profiler/graph"
	"github.com/plan-dev/plan/profiler/onnx"
	"github.com/plan-dev/plan/profiler/onnx/onnxtest"
)

// needORT skips a test when ONNX Runtime cannot be loaded, unless PLAN_REQUIRE_ALL=1 (CI),
// where a missing library is a failure.
func needORT(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv("PLAN_REQUIRE_ALL") == "1" {
			t.Fatalf("PLAN_REQUIRE_ALL=1 and ONNX Runtime is unavailable: %v", err)
		}
		t.Skipf("ONNX Runtime unavailable: %v", err)
	}
}

func build(t testing.TB, g *graph.Graph) []byte {
	t.Helper()
	data, err := onnx.Build(g, 1)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func blocks(cuts []int, n int) []formats.Block {
	var out []formats.Block
	prev := 0
	for _, c := range append(cuts, n) {
		out = append(out, formats.Block{FirstLayer: prev, EndLayer: c})
		prev = c
	}
	return out
}

// quick keeps functional tests fast: few repeats, one thread.
func quick(o Options) Options {
	o.Warmup, o.MinRepeats, o.MaxRepeats, o.Threads = 1, 3, 3, 1
	return o
}

// TestEveryLayerTimed checks that ONNX Runtime's profile, after mapping fused kernels back,
// gives every layer a positive time and a kernel.
func TestEveryLayerTimed(t *testing.T) {
	needORT(t)
	cases := map[string]*graph.Graph{
		"mlp":         onnxtest.MLP(64, 256, 10),
		"cnn":         onnxtest.CNN(16, 32),
		"transformer": onnxtest.Transformer(1000, 64, 4, 16),
	}
	models := map[string][]byte{}
	for name, g := range cases {
		models[name] = build(t, g)
	}
	// An exporter-style file: unnamed nodes, a Constant, a dynamic flatten.
	torch, tg := loadFixture(t, "torch_style.onnx")
	cases["torch"], models["torch"] = tg, torch
	for name, g := range cases {
		t.Run(name, func(t *testing.T) {
			r, err := Run(context.Background(), quick(Options{Model: models[name], Graph: g}))
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Layers) != len(g.Nodes) {
				t.Fatalf("%d layers timed, want %d", len(r.Layers), len(g.Nodes))
			}
			var sum float64
			for i, l := range r.Layers {
				if l.Name != g.Nodes[i].Name || l.Us <= 0 || l.Kernel == "" {
					t.Errorf("layer %d %q: %+v: want a positive time and a kernel", i, g.Nodes[i].Name, l)
				}
				sum += l.Us
			}
			if r.ProfiledRunUs > 0 && sum > 1.05*r.ProfiledRunUs {
				t.Errorf("layer times add up to %.1f µs, more than the run's %.1f µs", sum, r.ProfiledRunUs)
			}
			if r.ORTVersion != ORTVersion {
				t.Errorf("ORT version %q, want %q", r.ORTVersion, ORTVersion)
			}
		})
	}
}

func loadFixture(t *testing.T, name string) ([]byte, *graph.Graph) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "onnx", name))
	if err != nil {
		t.Fatal(err)
	}
	m, err := onnx.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	g, err := m.Graph(nil)
	if err != nil {
		t.Fatal(err)
	}
	return data, g
}

// TestShapeValuedCut cuts the exporter-style model between the Concat that computes the
// flatten target from the batch size and the Reshape that uses it: the second block must be
// fed the target for the batch being measured.
func TestShapeValuedCut(t *testing.T) {
	needORT(t)
	data, g := loadFixture(t, "torch_style.onnx")
	cut := -1
	for i, n := range g.Nodes {
		if n.Op == "Reshape" {
			cut = i
		}
	}
	r, err := Run(context.Background(), quick(Options{Model: data, Graph: g, Blocks: blocks([]int{cut}, len(g.Nodes)), Batches: []int{1, 4}, SkipLayers: true}))
	if err != nil {
		t.Fatal(err)
	}
	// Live across the cut: the pooled features [8,1,1] (fp16) and the int64 target [2] (4 B each).
	if want := int64(8*2 + 2*4); len(r.CutBytes) != 1 || r.CutBytes[0] != want {
		t.Errorf("cut bytes %v, want [%d]", r.CutBytes, want)
	}
}

func TestStaticBatchModel(t *testing.T) {
	needORT(t)
	data, g := loadFixture(t, "static_batch.onnx")
	if _, err := Run(context.Background(), quick(Options{Model: data, Graph: g, SkipLayers: true})); err != nil {
		t.Fatalf("batch 1 of a batch-1 model: %v", err)
	}
	_, err := Run(context.Background(), quick(Options{Model: data, Graph: g, Batches: []int{1, 2}}))
	if err == nil || !strings.Contains(err.Error(), "fixed batch size of 1") {
		t.Fatalf("err = %v, want a fixed-batch error", err)
	}
}

// TestCutBytes compares cut sizes with hand-computed fp16 bytes.
func TestCutBytes(t *testing.T) {
	needORT(t)
	cnn := onnxtest.CNN(8, 16)
	mlp := onnxtest.MLP(32, 64, 10)
	cases := []struct {
		name string
		g    *graph.Graph
		cuts []int
		want []int64
	}{
		// CNN nodes: 0 Conv 1 BN 2 Relu(stem) 3 Conv 4 Relu 5 Conv 6 Add 7 Relu 8 dwConv ...
		// cut 3: stem [8,16,16]; cut 5: stem + Relu_5 (skip connection live); cut 8: [8,16,16].
		{"cnn", cnn, []int{3, 5, 8}, []int64{8 * 16 * 16 * 2, 2 * 8 * 16 * 16 * 2, 8 * 16 * 16 * 2}},
		// MLP nodes: 0 Gemm 1 Relu 2 MatMul 3 Add 4 Relu 5 Gemm 6 Softmax; cut 5: [64]; cut 6: [10].
		{"mlp", mlp, []int{2, 5, 6}, []int64{64 * 2, 64 * 2, 10 * 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Run(context.Background(), quick(Options{Model: build(t, c.g), Graph: c.g, Blocks: blocks(c.cuts, len(c.g.Nodes)), SkipLayers: true}))
			if err != nil {
				t.Fatal(err)
			}
			if len(r.CutBytes) != len(c.want) {
				t.Fatalf("cut bytes %v, want %v", r.CutBytes, c.want)
			}
			for i := range c.want {
				if r.CutBytes[i] != c.want[i] {
					t.Errorf("cut %d: %d bytes, want %d", i+1, r.CutBytes[i], c.want[i])
				}
			}
		})
	}
}

// retry runs a measurement check and retries once: timing checks are statistical, and a busy CI
// machine can disturb one attempt.
func retry(t *testing.T, what string, attempt func() (ok bool, msg string)) {
	t.Helper()
	for i := 0; i < 2; i++ {
		ok, msg := attempt()
		if ok {
			return
		}
		t.Logf("%s, attempt %d: %s", what, i+1, msg)
		if i == 1 {
			t.Errorf("%s: %s", what, msg)
		}
	}
}

// TestBlockSums checks that the blocks' medians add up to the whole model's median within
// 15%: cutting costs a session call and layout conversions per block, which must stay small
// against compute for the block table to describe the model. The blocks and the whole model
// are timed in interleaved rounds, so slow drifts of machine load hit both alike. On a
// machine so busy that runs are preempted (a CV above 0.1), medians of runs of different
// lengths stop being comparable (a long run is preempted more often); there the check falls
// back to the fastest runs, the standard estimator for noisy timing, and says so.
func TestBlockSums(t *testing.T) {
	needORT(t)
	cases := []struct {
		name  string
		g     *graph.Graph
		cuts  []int
		batch int
	}{
		{"mlp", onnxtest.MLP(512, 1024, 1000), []int{2, 5}, 8},
		// Cuts after the residual stage and after the depthwise-separable block.
		{"cnn", onnxtest.CNN(48, 48), []int{8, 12}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := build(t, c.g)
			retry(t, "block sum", func() (bool, string) {
				r, err := Run(context.Background(), Options{
					Model: data, Graph: c.g, Blocks: blocks(c.cuts, len(c.g.Nodes)), Batches: []int{c.batch},
					Warmup: 3, MinRepeats: 20, MaxRepeats: 100, Threads: 1, SkipLayers: true,
				})
				if err != nil {
					t.Fatal(err)
				}
				m := r.Measurements[0]
				var sum, fastest float64
				for _, b := range m.Blocks {
					sum += b.MedianUs
					fastest += b.MinUs
				}
				ratio := sum / m.Total.MedianUs
				msg := fmt.Sprintf("block medians %s sum to %.0f µs, whole model %.0f µs (cv %.2f): ratio %.2f", fmtStats(m.Blocks), sum, m.Total.MedianUs, m.Total.CV, ratio)
				if ratio >= 0.85 && ratio <= 1.15 {
					return true, msg
				}
				noisy := m.Total.CV > 0.1
				for _, b := range m.Blocks {
					noisy = noisy || b.CV > 0.1
				}
				if noisy {
					fr := fastest / m.Total.MinUs
					t.Logf("%s; machine oversubscribed, fastest runs: ratio %.2f", msg, fr)
					return fr >= 0.85 && fr <= 1.15, msg + fmt.Sprintf("; fastest runs ratio %.2f", fr)
				}
				return false, msg
			})
		})
	}
}

// TestBatchGrows checks that batch 8 takes longer than batch 1 (adjacent batches can tie).
func TestBatchGrows(t *testing.T) {
	needORT(t)
	g := onnxtest.CNN(16, 32)
	data := build(t, g)
	retry(t, "batch latency", func() (bool, string) {
		r, err := Run(context.Background(), Options{Model: data, Graph: g, Batches: []int{1, 8}, Warmup: 2, MinRepeats: 10, MaxRepeats: 30, Threads: 1, SkipLayers: true})
		if err != nil {
			t.Fatal(err)
		}
		b1, b8 := r.Measurements[0].Total.MedianUs, r.Measurements[1].Total.MedianUs
		return b8 > b1, fmt.Sprintf("b=1 %.0f µs, b=8 %.0f µs", b1, b8)
	})
}

// TestVGPUAndEntries runs two concurrent sessions per block and converts the result to
// profile entries.
func TestVGPUAndEntries(t *testing.T) {
	needORT(t)
	g := onnxtest.CNN(8, 16)
	var calls, last, total int
	r, err := Run(context.Background(), quick(Options{
		Model: build(t, g), Graph: g, Blocks: blocks([]int{5}, len(g.Nodes)), Batches: []int{1, 2}, VGPU: []int{1, 2},
		Progress: func(done, tot int) { calls++; last, total = done, tot },
	}))
	if err != nil {
		t.Fatal(err)
	}
	if calls == 0 || last != total || total != 2*2*3+1 {
		t.Errorf("progress: %d calls, last %d/%d", calls, last, total)
	}
	es := r.Entries("")
	if len(es) != 4 {
		t.Fatalf("%d entries, want 4", len(es))
	}
	for _, e := range es {
		if e.GPU != "cpu" || len(e.BlockUs) != 2 || len(e.P90Us) != 2 || len(e.CV) != 2 || e.TotalUs <= 0 {
			t.Errorf("entry %+v", e)
		}
		for _, b := range e.BlockUs {
			if b <= 0 {
				t.Errorf("entry %+v: non-positive block latency", e)
			}
		}
	}
	if es[2].VGPU != 2 || es[2].Batch != 1 {
		t.Errorf("entry 2 is vgpu %d batch %d, want 2, 1", es[2].VGPU, es[2].Batch)
	}
	if ll := r.LayerLatency("L4"); len(ll) != len(g.Nodes) || ll[0]["L4"] <= 0 {
		t.Errorf("layer latency %v", ll)
	}
}

func TestBadInput(t *testing.T) {
	needORT(t)
	g := onnxtest.CNN(4, 8)
	data := build(t, g)
	cases := []struct {
		name string
		opts Options
		is   error
		say  string
	}{
		{"not onnx", Options{Model: []byte("GIF89a...")}, onnx.ErrNotONNX, "not an ONNX model"},
		{"cuda missing", Options{Model: data, Device: "cuda:0"}, ErrDevice, "CUDA"},
		{"trt on cpu", Options{Model: data, TRT: true}, ErrDevice, "--trt"},
		{"unknown device", Options{Model: data, Device: "tpu"}, ErrDevice, "unknown device"},
		{"bad block", Options{Model: data, Blocks: []formats.Block{{FirstLayer: 0, EndLayer: 99}}}, nil, "not a non-empty range"},
		{"gap between blocks", Options{Model: data, Blocks: []formats.Block{{FirstLayer: 0, EndLayer: 2}, {FirstLayer: 3, EndLayer: 5}}}, nil, "contiguous"},
		{"bad batch", Options{Model: data, Batches: []int{0}}, nil, "batch 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Run(context.Background(), quick(c.opts))
			if err == nil || (c.is != nil && !errors.Is(err, c.is)) || !strings.Contains(err.Error(), c.say) {
				t.Fatalf("err = %v, want %v saying %q", err, c.is, c.say)
			}
		})
	}
	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := Run(ctx, quick(Options{Model: data})); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
}

// TestFindLibrary covers the library search without loading anything.
func TestFindLibrary(t *testing.T) {
	root := t.TempDir()
	lib := filepath.Join(root, "third_party", "onnxruntime", "libonnxruntime.so")
	if err := os.MkdirAll(filepath.Dir(lib), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lib, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	deep := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin", "plan")
	empty := t.TempDir()
	// The layout of `make install PREFIX=prefix`.
	prefix := t.TempDir()
	instLib := filepath.Join(prefix, "lib", "plan", "libonnxruntime.so")
	if err := os.MkdirAll(filepath.Dir(instLib), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(instLib, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, env, exe, cwd string
		want, err           string
	}{
		{"env", lib, "", empty, lib, ""},
		{"env missing", filepath.Join(empty, "nope.so"), "", deep, "", "PLAN_ORT_LIB"},
		{"walk up from cwd", "", "", deep, lib, ""},
		{"next to bin/..", "", bin, empty, filepath.Join(root, "bin", "..", "third_party", "onnxruntime", "libonnxruntime.so"), ""},
		{"installed: PREFIX/lib/plan", "", filepath.Join(prefix, "bin", "plan"), empty, filepath.Join(prefix, "bin", "..", "lib", "plan", "libonnxruntime.so"), ""},
		{"nowhere", "", filepath.Join(empty, "plan"), empty, "", "make assets"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := findLibrary(c.env, c.exe, c.cwd)
			if c.err != "" {
				if err == nil || !errors.Is(err, ErrNoLibrary) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want one mentioning %q", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func TestParseDevice(t *testing.T) {
	cases := []struct {
		in   string
		kind string
		id   int
		err  bool
	}{
		{"", "cpu", 0, false}, {"cpu", "cpu", 0, false}, {"cuda:0", "cuda", 0, false},
		{"cuda:3", "cuda", 3, false}, {"cuda", "", 0, true}, {"gpu:0", "", 0, true}, {"cuda:-1", "", 0, true},
	}
	for _, c := range cases {
		kind, id, err := ParseDevice(c.in)
		if (err != nil) != c.err || kind != c.kind || id != c.id {
			t.Errorf("ParseDevice(%q) = %q, %d, %v", c.in, kind, id, err)
		}
	}
}

func TestGPUType(t *testing.T) {
	cases := map[string]string{
		"NVIDIA L4": "L4", "Tesla P4": "P4", "Tesla T4": "T4", "NVIDIA A100-SXM4-40GB": "A100",
		"NVIDIA A100 80GB PCIe": "A100", "NVIDIA H100 80GB HBM3": "H100", "NVIDIA H200": "H200",
		"Tesla V100-SXM2-16GB": "V100", "NVIDIA A10G": "A10", "NVIDIA A10": "A10", "NVIDIA L40S": "L40S",
		"NVIDIA B200": "B200", "NVIDIA A800-SXM4-80GB": "A800", "NVIDIA GH200 480GB": "GH200", "NVIDIA A40": "A40",
		"NVIDIA GeForce RTX 4090": "", "": "",
	}
	for in, want := range cases {
		if got := GPUType(in); got != want {
			t.Errorf("GPUType(%q) = %q, want %q", in, got, want)
		}
	}
	if DeviceType("cpu") != "cpu" || DeviceType("") != "cpu" {
		t.Error("DeviceType of the CPU is not cpu")
	}
}

// TestStats: a layer's statistics are internal/base/quantile's percentiles (linear, numpy's
// default) of its samples in any order, and their coefficient of variation.
func TestStats(t *testing.T) {
	s := summarize([]float64{5, 1, 4, 2, 3})
	if s.MedianUs != 3 || math.Abs(s.P90Us-4.6) > 1e-9 || s.MinUs != 1 || s.Repeats != 5 {
		t.Errorf("stats %+v", s)
	}
	if s := summarize([]float64{10, 10, 10}); s.CV != 0 || s.MedianUs != 10 || s.Repeats != 3 {
		t.Errorf("stats %+v", s)
	}
}

func fmtStats(ss []Stats) string {
	var parts []string
	for _, s := range ss {
		parts = append(parts, fmt.Sprintf("%.0f", s.MedianUs))
	}
	return "[" + strings.Join(parts, " ") + "]"
}
