package profile

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/plan-dev/plan/formats"
	progressline "github.com/plan-dev/plan/internal/base/progress"
	"github.com/plan-dev/plan/internal/onformats/demo"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/profiler"
	"github.com/plan-dev/plan/profiler/gpus"
	"github.com/plan-dev/plan/profiler/graph"
	"github.com/plan-dev/plan/profiler/llm"
	"github.com/plan-dev/plan/profiler/measure"
	"github.com/plan-dev/plan/profiler/onnx"
	"github.com/plan-dev/plan/profiler/partition"
	"github.com/plan-dev/plan/profiler/roofline"
	"github.com/plan-dev/plan/profiler/trt"
	"github.com/plan-dev/plan/profiler/zoo"
)

// loadGraph returns the IR of the zoo model or ONNX file, and a source label.
func (r *profileRun) loadGraph() (*graph.Graph, string, error) {
	if r.opt.Zoo != "" {
		g, err := zoo.Build(r.opt.Zoo)
		if err != nil {
			return nil, "", run.UsageError(err)
		}
		return g, "zoo:" + strings.ToLower(r.opt.Zoo), nil
	}
	if r.model == "" {
		g, err := zoo.Build("demo")
		return g, "zoo:demo", err
	}
	data, err := onnx.ReadFile(r.model)
	if err != nil {
		return nil, "", run.UsageError(err)
	}
	m, err := onnx.Parse(data)
	if err != nil {
		return nil, "", run.UsageErrorf("%s: %v", r.model, err)
	}
	g, err := m.Graph(r.inputShape)
	if err != nil {
		return nil, "", run.UsageErrorf("%s: %v", r.model, err)
	}
	if err := g.Validate(); err != nil {
		return nil, "", run.UsageErrorf("%s: %v", r.model, err)
	}
	if g.TotalFLOPs() == 0 {
		if err := graph.Annotate(g); err != nil {
			return nil, "", run.UsageErrorf("%s: %v", r.model, err)
		}
	}
	g.Name = strings.TrimSuffix(filepath.Base(r.model), filepath.Ext(r.model))
	return g, r.model, nil
}

func (r *profileRun) roofGPUs() []string {
	if r.gpusSet {
		return r.gpus
	}
	return []string{"L4", "P4"}
}

func (r *profileRun) analytic(io *run.IO, g *graph.Graph, src string) (*formats.ModelProfile, error) {
	io.Infof("profile: roofline estimate of %s (%d layers, %.1f GFLOPs) on %s", g.Name, len(g.Nodes), g.TotalFLOPs()/1e9, strings.Join(r.roofGPUs(), ", "))
	mp, err := roofline.Profile(g, roofline.Options{
		GPUs: r.roofGPUs(), DefaultGrid: r.grid(), Blocks: r.opt.Blocks, Method: r.method,
		Seed: r.opt.Seed, Source: src, Precision: gpus.Precision(r.opt.Precision),
	})
	if err != nil {
		return nil, err
	}
	return mp, nil
}

// demo is the no-model case: the embedded demo's analytic profile for the demo cluster (or
// for --gpu), plus a CPU measurement when ONNX Runtime is available.
func (r *profileRun) demo(ctx context.Context, io *run.IO) ([]formats.ModelProfile, error) {
	var mp *formats.ModelProfile
	if r.gpusSet || r.grid() != nil || r.opt.Blocks != 10 || r.method != partition.MinTraffic || r.opt.Seed != profiler.DemoSeed || r.opt.Precision != "" {
		g, src, err := r.loadGraph()
		if err != nil {
			return nil, err
		}
		if mp, err = r.analytic(io, g, src); err != nil {
			return nil, err
		}
	} else {
		c, err := demo.Cluster()
		if err != nil {
			return nil, err
		}
		io.Infof("profile: no model given: the demo CNN, roofline estimates for the demo cluster (%s)", clusterTypes(c))
		doc, err := profiler.DemoProfile(c)
		if err != nil {
			return nil, err
		}
		mp = &doc.Models[0]
	}
	out := []formats.ModelProfile{*mp}
	if r.opt.Backend == "roofline" {
		return out, nil
	}
	if err := measure.Available(); err != nil {
		io.Infof("profile: skipping the CPU measurement: %v", err)
		return out, nil
	}
	g, src, err := r.loadGraph()
	if err != nil {
		return nil, err
	}
	cpu, err := r.measured(ctx, io, g, src, mp.Blocks)
	if err != nil {
		return nil, err
	}
	cpu.Name = mp.Name + "-cpu"
	return append(out, *cpu), nil
}

func clusterTypes(c *formats.Cluster) string {
	var s []string
	for _, p := range c.GPUs {
		s = append(s, fmt.Sprintf("%d×%s", p.Count, p.Type))
	}
	return strings.Join(s, " + ")
}

// measured times g's blocks with ONNX Runtime. blocks == nil pre-partitions on roofline
// estimates of the --gpu types (default L4): the paper notes the reference type barely
// changes the blocks, and it avoids a second, per-layer measurement pass.
func (r *profileRun) measured(ctx context.Context, io *run.IO, g *graph.Graph, src string, blocks []formats.Block) (*formats.ModelProfile, error) {
	if err := measure.Available(); err != nil {
		return nil, run.UsageErrorf("--backend onnx: %v", err)
	}
	var data []byte
	var err error
	if r.model != "" {
		if data, err = onnx.ReadFile(r.model); err != nil {
			return nil, run.UsageError(err)
		}
	} else {
		io.Infof("profile: materializing %s as ONNX (random weights, seed %d)", g.Name, r.opt.Seed)
		if data, err = onnx.Build(g, r.opt.Seed); err != nil {
			return nil, fmt.Errorf("building ONNX for %s: %w", g.Name, err)
		}
	}
	// The IR of the bytes being measured: block indices must refer to its nodes.
	m, err := onnx.Parse(data)
	if err != nil {
		return nil, run.UsageErrorf("%s: %v", src, err)
	}
	mg, err := m.Graph(r.inputShape)
	if err != nil {
		return nil, run.UsageErrorf("%s: %v", src, err)
	}
	if mg.TotalFLOPs() == 0 {
		if err := graph.Annotate(mg); err != nil {
			return nil, err
		}
	}
	mg.Name = g.Name
	var part *partition.Result
	if blocks == nil || len(mg.Nodes) != len(g.Nodes) {
		ref := r.gpus
		if len(ref) == 0 {
			ref = []string{"L4"}
		}
		est, err := roofline.Profile(mg, roofline.Options{GPUs: ref, DefaultGrid: []roofline.Point{{VGPU: 1, Batch: 1}}, Blocks: r.opt.Blocks, Method: r.method, Noise: -1})
		if err != nil {
			return nil, err
		}
		blocks = est.Blocks
		part = &partition.Result{Blocks: est.Blocks, CutBytes: est.CutBytes, Info: *est.Partition}
	}
	batches := r.batches
	if batches == nil {
		batches = []int{1, 2, 4, 8}
		if r.model == "" && r.opt.Zoo == "" {
			// The demo is sized for GPUs; keep its CPU pass short.
			batches = []int{1}
		}
	}
	mo := measure.Options{Model: data, Graph: mg, Blocks: blocks, Batches: batches, Device: r.opt.Device, TRT: r.opt.TRT, Seed: r.opt.Seed}
	if r.vgpus != nil && r.opt.Device != "cpu" {
		mo.VGPU = r.vgpus
	}
	if r.model == "" && r.opt.Zoo == "" {
		mo.Warmup, mo.MinRepeats, mo.MaxTime = 1, 3, 2*time.Second
	}
	// The bar shows before the first measurement ends; its total comes with the first step.
	bar := progressline.NewTask(io.Err, io.Quiet, "profile: measuring "+g.Name+" on "+r.opt.Device, "measurements", 0)
	mo.Progress = func(done, total int) {
		bar.Step(done, total, "")
	}
	res, err := measure.Run(ctx, mo)
	if err != nil {
		bar.Clear()
	} else {
		bar.Finish("")
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, run.UsageErrorf("--backend onnx: %v", err)
	}
	label := r.opt.Device
	if r.opt.Device != "cpu" && len(r.gpus) == 1 {
		label = r.gpus[0]
	}
	mp := &formats.ModelProfile{
		Name:        g.Name,
		Backend:     "onnx",
		Source:      src,
		Device:      r.opt.Device,
		MemoryBytes: mg.TotalParamBytes(),
		Blocks:      blocks,
		CutBytes:    res.CutBytes,
		Latency:     res.Entries(label),
	}
	if part != nil {
		mp.Partition = &part.Info
	}
	if len(mg.Inputs) > 0 {
		mp.InputShape = mg.Tensors[mg.Inputs[0]].Shape
	}
	lat := res.LayerLatency(label)
	for q, n := range mg.Nodes {
		l := formats.Layer{Name: n.Name, Op: n.Op, FLOPs: n.FLOPs, Bytes: float64(n.ParamBytes) + n.ActBytes, ParamBytes: n.ParamBytes}
		for _, o := range n.Outputs {
			l.OutputBytes += mg.Tensors[o].TransferBytes()
		}
		if q < len(lat) {
			l.LatencyUs = lat[q]
		}
		mp.Layers = append(mp.Layers, l)
	}
	for i := range mp.Blocks {
		mp.Blocks[i].MemoryBytes = 0
		for q := mp.Blocks[i].FirstLayer; q < mp.Blocks[i].EndLayer; q++ {
			mp.Blocks[i].MemoryBytes += mg.Nodes[q].ParamBytes
		}
	}
	return mp, nil
}

func (r *profileRun) importTRT() (*formats.ModelProfile, error) {
	prof, err := formats.ReadBytes(r.opt.TRTProfile)
	if err != nil {
		return nil, run.UsageError(err)
	}
	var layers []byte
	if r.opt.TRTLayers != "" {
		if layers, err = formats.ReadBytes(r.opt.TRTLayers); err != nil {
			return nil, run.UsageError(err)
		}
	}
	batch := 1
	if len(r.batches) == 1 {
		batch = r.batches[0]
	}
	name := strings.TrimSuffix(filepath.Base(r.opt.TRTProfile), filepath.Ext(r.opt.TRTProfile))
	src := r.opt.TRTProfile
	if r.opt.TRTLayers != "" {
		src += "," + r.opt.TRTLayers
	}
	mp, err := trt.Import(prof, layers, trt.ImportOptions{Name: name, Source: src, GPU: r.gpus[0], Batch: batch, Blocks: r.opt.Blocks, Method: r.method})
	if err != nil {
		return nil, run.UsageErrorf("%s: %v", src, err)
	}
	return mp, nil
}

// BlockRow is one summary line of a DNN profile: a latency entry (the JSON summary's
// blocks).
type BlockRow struct {
	Model   string    `json:"model"`
	Device  string    `json:"device"`
	VGPU    int       `json:"vgpu"`
	Batch   int       `json:"batch"`
	TotalMs float64   `json:"total_ms"`
	BlockUs []float64 `json:"block_us"`
}

// LLMRow is one summary line of an LLM profile (the JSON summary's llms).
type LLMRow struct {
	Model    string  `json:"model"`
	GPU      string  `json:"gpu"`
	GPUs     int     `json:"gpus"`
	DecodeMs float64 `json:"decode_ms"`
	// DecodeBatch is the running batch DecodeMs is the step at (the profile's avg_batch:
	// the KV cache's share of ~400-token requests, at most 256).
	DecodeBatch float64 `json:"decode_batch"`
	Throughput  float64 `json:"throughput_tokens_per_s"`
	KVTokens    int64   `json:"kv_capacity_tokens"`
	// ExpectedError is the step time's expected-error band (the validation set's
	// leave-one-run-out ITL errors in the profile's regime, llm.BandsFor), with its basis
	// and the regime's warnings.
	ExpectedError *llm.Bands `json:"expected_error,omitempty"`
}

func (r *profileRun) summary(io *run.IO, doc *formats.Profile) error {
	var rows []BlockRow
	for _, m := range doc.Models {
		for _, e := range m.Latency {
			rows = append(rows, BlockRow{Model: m.Name, Device: e.GPU, VGPU: e.VGPU, Batch: e.Batch, TotalMs: e.WholeUs() / 1000, BlockUs: e.BlockUs})
		}
	}
	var lrows []LLMRow
	for _, l := range doc.LLMs {
		bands := llm.BandsFor(llm.RegimeOf(&l), llm.ValidationRuns())
		lrows = append(lrows, LLMRow{ExpectedError: &bands, Model: l.Model, GPU: l.GPU, GPUs: l.GPUCount, DecodeMs: l.DecodeUsPerToken / 1000, DecodeBatch: l.AvgBatch,
			Throughput: l.ThroughputTokensPerS, KVTokens: l.KVCapacityTokens})
	}
	if io.JSONOutput() {
		return io.WriteJSON(struct {
			File    string       `json:"file"`
			Blocks  []BlockRow   `json:"blocks,omitempty"`
			LLMs    []LLMRow     `json:"llms,omitempty"`
			Explain []llmExplain `json:"explain,omitempty"`
		}{r.opt.Out, rows, lrows, r.explained})
	}
	if len(rows) > 0 {
		var tab [][]string
		for _, row := range rows {
			bs := make([]string, len(row.BlockUs))
			for i, b := range row.BlockUs {
				bs[i] = strconv.FormatFloat(b, 'f', 0, 64)
			}
			tab = append(tab, []string{row.Model, row.Device, strconv.Itoa(row.VGPU), strconv.Itoa(row.Batch),
				strconv.FormatFloat(row.TotalMs, 'f', 2, 64), strings.Join(bs, " ")})
		}
		io.Table([]string{"model", "device", "vgpu", "batch", "total ms", "block µs"}, tab)
	}
	if len(lrows) > 0 {
		var tab [][]string
		for _, l := range lrows {
			tab = append(tab, []string{l.Model, l.GPU, strconv.Itoa(l.GPUs), strconv.FormatFloat(l.DecodeMs, 'f', 1, 64),
				l.ExpectedError.ITL.String(), strconv.FormatFloat(l.DecodeBatch, 'f', 0, 64), strconv.FormatFloat(l.Throughput, 'f', 0, 64), strconv.FormatInt(l.KVTokens, 10)})
		}
		// The decode step is read at the batch the KV cache holds (avg_batch), so a
		// profile with more KV (FP8 weights or cache) shows a slower step at a larger batch.
		io.Table([]string{"llm", "gpu", "gpus", "decode ms", "expected error", "at batch", "tokens/s", "kv tokens"}, tab)
		printBandNotes(io, lrows)
	}
	writeExplain(io.Out, r.explained)
	return nil
}

// printBandNotes says once where the step times' expected-error bands come from, and each
// distinct regime warning once.
func printBandNotes(io *run.IO, rows []LLMRow) {
	seen := map[string]bool{}
	for i, l := range rows {
		if i == 0 {
			fmt.Fprintf(io.Out, "expected error: the decode step's, from %s\n", l.ExpectedError.Basis)
		}
		for _, w := range append(slices.Clone(l.ExpectedError.Widened), l.ExpectedError.Warnings...) {
			if !seen[w] {
				seen[w] = true
				fmt.Fprintf(io.Out, "  %s\n", w)
			}
		}
	}
}
