package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	progressline "github.com/plan-dev/plan/internal/progress"
	"github.com/plan-dev/plan/internal/run"

	"github.com/spf13/cobra"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/demo"
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

type profileOptions struct {
	zoo        string
	backend    string
	device     string
	gpus       []string
	batch      string
	vgpu       string
	blocks     int
	method     string
	inputShape string
	trtProfile string
	trtLayers  string
	llm        string
	steps      string
	tp         string
	link       string
	explain    bool
	// gpuCount and kvTokens describe the engine of an --import step log the log does not
	// (profile_import.go).
	gpuCount  int
	kvTokens  int64
	precision string
	useTRT    bool
	seed      int64
	out       string
}

// profileRun is the parsed, validated form of the options.
type profileRun struct {
	opt        profileOptions
	model      string // ONNX path, "" when none
	gpus       []string
	gpusSet    bool
	batches    []int
	vgpus      []int
	method     partition.Method
	inputShape []int64
	// use is what the written profile serves: planning, or (an engine-only profile from a
	// step log, profile_import.go) one engine's replay.
	use formats.ProfileUse
	// note is said on stderr once the profile is built (an engine-only import).
	note      string
	llmNames  []string // catalogue models --llm names ("all" expanded); nil for an import
	zoos      []string // the zoo architectures --zoo names (not its LLMs), in order
	tps       []int    // --tp degrees; nil picks the smallest that fits
	link      roofline.Link
	explained []llmExplain // --explain: filled by llmProfiles
}

func newProfileCmd(app *App) *cobra.Command {
	o := profileOptions{}
	cmd := &cobra.Command{
		Use:   "profile [MODEL.onnx]",
		Short: "Measure or estimate per-block latency of a model and write profile.json",
		Long: `Profile a DNN: group its layers into blocks (pre-partitioning), compute the bytes crossing
every cut between blocks, and fill a latency table per GPU type, vGPU slice level and batch.

Backends:
  roofline  analytic estimate from layer FLOPs and bytes against a GPU spec table (P4, T4, L4,
            A10, V100, L40S, A100, H100, H200), for a zoo architecture (--zoo) or an ONNX file
  onnx      measured with ONNX Runtime on --device (cpu, or cuda:N where the installed
            ONNX Runtime has the CUDA provider); blocks are timed as their own sessions
  trt       import of trtexec --exportProfile (--trt-profile) and --exportLayerInfo
            (--trt-layers) JSON for the GPU named by --gpu

With no model, profiles the embedded demo CNN analytically for the demo cluster's GPU types
(L4, P4 at PPipe's vGPU x batch grid) and, when ONNX Runtime is available, on the local CPU.
--llm adds LLM profiles (QLM): model names separated by commas, "all", or a profile file to
import. Roofline LLM profiles are at the smallest tensor-parallel degree that fits unless --tp
lists degrees (1-8; those a model cannot be sharded over or whose GPUs cannot hold it are
skipped, named on stderr), over NVLink where the GPU has it unless --link pcie. --explain prints
each profile's step model by term (gemm, attention, allreduce, elementwise, overhead) at
prefill of 512/2048/8192 tokens and decode of 1/8/32/128 sequences at 2,048 tokens of context.
--llm with --import STEPS replaces the one LLM profile's iteration curves with measured step
times: a CSV (header tokens,prefill_tokens,seconds, optionally context_tokens) or JSONL
table of engine steps; the decode-only and prefill-containing curves are fitted as measured
(points falling by more than 10% are named on stderr and kept), with a per-context-token
term when the steps give their context. The log may say which engine ran it (columns model,
gpu, gpu_count, kv_capacity_tokens; or --llm, --gpu, --gpu-count, --kv-capacity-tokens):
any model on any GPU count. A model and GPU the analytic model knows get its planner
fields; any other gets an engine-only profile, for plan simulate --llm.
The profile is validated and written atomically; a summary table goes to stdout.`,
		Example: `  plan profile                                   # the demo model
  plan profile --zoo efficientnet-b8 --gpu L4,P4,T4,V100 -o effnet.json
  plan profile --zoo resnet50 --batch 1-8 --vgpu 1-4 --partition greedy
  plan profile model.onnx --device cpu --batch 1,2,4 --input-shape 3,224,224
  plan profile model.onnx --backend roofline --gpu A100
  plan profile --backend trt --trt-profile prof.json --trt-layers layers.json --gpu L4
  plan profile --llm all --gpu A10,A100,H100 -o llm.json
  plan profile --llm llama-3.1-8b,llama-3.1-70b --gpu H100 --tp 1,2,4,8 --explain
  plan profile --zoo llama-2-70b --gpu A100
  plan profile --llm mistral-7b --gpu A100 --import steps.csv -o llm.json
  plan profile --import llama3-8b-h100-tp2-steps.csv -o engine.json   # model, gpu, gpu_count, kv_capacity_tokens columns`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			run, err := o.parse(cmd, args)
			if err != nil {
				return err
			}
			return run.execute(cmd.Context(), app)
		},
	}
	f := cmd.Flags()
	listVar(f, &o.zoo, "zoo", "", "profile zoo architectures (comma list; repeatable): "+strings.Join(zoo.Names(), ", "))
	f.StringVar(&o.backend, "backend", "", "onnx, roofline or trt (default: onnx for a MODEL.onnx, roofline otherwise)")
	f.StringVar(&o.device, "device", "cpu", "device for the onnx backend: cpu or cuda:N")
	f.StringSliceVar(&o.gpus, "gpu", nil, "GPU types for roofline estimates (default L4,P4; A10,A100,H100 for --llm)")
	listVar(f, &o.batch, "batch", "", "batch sizes, e.g. 1-8 or 1,2,4 (default: PPipe's grid, 1-8 on whole GPUs)")
	listVar(f, &o.vgpu, "vgpu", "", "vGPU slice levels, e.g. 1-4 (default: PPipe's grid)")
	f.IntVar(&o.blocks, "blocks", 10, "number of blocks to pre-partition into")
	f.StringVar(&o.method, "partition", "min-traffic", "pre-partitioning: greedy or min-traffic")
	f.StringVar(&o.inputShape, "input-shape", "", "per-sample input shape for ONNX models with dynamic dimensions, e.g. 3,224,224")
	f.StringVar(&o.trtProfile, "trt-profile", "", "trtexec --exportProfile JSON (backend trt)")
	f.StringVar(&o.trtLayers, "trt-layers", "", "trtexec --exportLayerInfo JSON (backend trt; detailed verbosity gives cut sizes)")
	listVar(f, &o.llm, "llm", "", "LLM profiles: comma-separated names of "+strings.Join(llm.Names(), ", ")+"; all; or a profile file to import")
	listVar(f, &o.tp, "tp", "", "with --llm: tensor-parallel degrees to profile, e.g. 1,2,4,8 or 1-8 (default: the smallest that fits)")
	f.StringVar(&o.link, "link", "auto", "with --llm: GPU interconnect for tensor-parallel all-reduces: auto (NVLink where the GPU has it), nvlink or pcie")
	f.BoolVar(&o.explain, "explain", false, "with --llm: print each roofline LLM profile's step time by term")
	f.StringVar(&o.steps, "import", "", "measured engine step times to fit an LLM profile's iteration curves (CSV or JSONL: tokens, prefill_tokens, seconds; optionally model, gpu, gpu_count, kv_capacity_tokens naming the engine, and vllm_version, kv_allocation, release, block_size, enable_prefix_caching, max_num_batched_tokens, max_num_seqs saying how it scheduled: the profile's engine block), for the one model and GPU of --llm/--gpu or of the log (or a one-LLM profile file given as --llm)")
	f.IntVar(&o.gpuCount, "gpu-count", 0, "with --import: the GPUs the engine ran on (tensor parallelism; default: the log's gpu_count, else the fewest that hold a known model, else 1)")
	f.Int64Var(&o.kvTokens, "kv-capacity-tokens", 0, "with --import: the engine's KV capacity in tokens (vLLM's GPU blocks × block size; default: the log's kv_capacity_tokens, else the analytic estimate of a known model)")
	f.BoolVar(&o.useTRT, "trt", false, "onnx backend on cuda:N: put ONNX Runtime's TensorRT execution provider in front of CUDA")
	f.StringVar(&o.precision, "precision", "", "roofline arithmetic: fp32, tf32 or fp16 (default: TF32 where the GPU has it, else FP32, as PPipe's TensorRT builds; only the default is calibrated)")
	f.Int64Var(&o.seed, "seed", profiler.DemoSeed, "seed for the roofline tie-breaking noise and measured input data")
	f.StringVarP(&o.out, "out", "o", "profile.json", "output file (- writes the profile to stdout instead of the summary)")
	return cmd
}

// parse checks every flag before any work starts, so bad input writes nothing.
func (o profileOptions) parse(cmd *cobra.Command, args []string) (*profileRun, error) {
	r := &profileRun{opt: o, use: formats.UsePlan}
	if len(args) == 1 {
		r.model = args[0]
	}
	if r.model != "" && o.zoo != "" {
		return nil, run.UsageErrorf("give either MODEL.onnx or --zoo, not both")
	}
	// --zoo names one or more models (a comma list, or repeated: listVar); LLMs live in the
	// zoo too (plan profile --zoo NAME --gpu A100) and go to the LLM profiles.
	var zooLLMs []string
	for _, z := range strings.Split(o.zoo, ",") {
		z = strings.ToLower(strings.TrimSpace(z))
		switch {
		case z == "" || slices.Contains(r.zoos, z) || slices.Contains(zooLLMs, z):
		case slices.Contains(llm.Names(), z):
			zooLLMs = append(zooLLMs, z)
		case slices.Contains(zoo.Names(), z):
			r.zoos = append(r.zoos, z)
		default:
			return nil, run.UsageErrorf("--zoo: %q: unknown model; known models: %s; LLMs: %s", z, strings.Join(zoo.Names(), ", "), strings.Join(llm.Names(), ", "))
		}
	}
	if len(zooLLMs) > 0 {
		if o.llm != "" {
			return nil, run.UsageErrorf("--zoo %s is an LLM: drop --llm", strings.Join(zooLLMs, ","))
		}
		r.opt.llm = strings.Join(zooLLMs, ",")
	}
	o.zoo = strings.Join(r.zoos, ",")
	r.opt.zoo = ""
	if len(r.zoos) > 0 {
		r.opt.zoo = r.zoos[0]
	}
	switch gpus.Precision(o.precision) {
	case "", gpus.FP32, gpus.TF32, gpus.FP16:
	default:
		return nil, run.UsageErrorf("--precision: %q: must be fp32, tf32 or fp16", o.precision)
	}
	switch o.backend {
	case "":
		if r.model != "" {
			r.opt.backend = "onnx"
		} else if o.trtProfile != "" {
			r.opt.backend = "trt"
		}
	case "onnx", "roofline", "trt":
	default:
		return nil, run.UsageErrorf("--backend: %q: must be onnx, roofline or trt", o.backend)
	}
	if r.opt.backend == "trt" {
		if o.trtProfile == "" {
			return nil, run.UsageErrorf("--backend trt: needs --trt-profile (trtexec --exportProfile JSON)")
		}
		if r.model != "" || o.zoo != "" {
			return nil, run.UsageErrorf("--backend trt: imports trtexec exports; drop MODEL.onnx / --zoo")
		}
	} else if o.trtProfile != "" || o.trtLayers != "" {
		return nil, run.UsageErrorf("--trt-profile/--trt-layers: only with --backend trt")
	}
	if _, _, err := measure.ParseDevice(o.device); err != nil {
		return nil, run.UsageErrorf("--device: %q: %v", o.device, err)
	}
	if o.useTRT && (r.opt.backend != "onnx" || !strings.HasPrefix(o.device, "cuda")) {
		return nil, run.UsageErrorf("--trt: needs --backend onnx (or a MODEL.onnx) and --device cuda:N")
	}
	if cmd.Flags().Changed("device") && r.opt.backend != "onnx" && !(r.model == "" && o.zoo == "" && r.opt.backend == "") {
		return nil, run.UsageErrorf("--device: only the onnx backend runs on a device (use --gpu for roofline estimates)")
	}
	var err error
	if r.method, err = partition.ParseMethod(o.method); err != nil {
		return nil, run.UsageErrorf("--partition: %q: must be greedy or min-traffic", o.method)
	}
	if o.blocks < 1 || o.blocks > 1000 {
		return nil, run.UsageErrorf("--blocks: %d: must be in 1..1000", o.blocks)
	}
	if r.batches, err = parseIntList(o.batch, 1, 4096); err != nil {
		return nil, run.UsageErrorf("--batch: %q: %v", o.batch, err)
	}
	if r.vgpus, err = parseIntList(o.vgpu, 1, 4); err != nil {
		return nil, run.UsageErrorf("--vgpu: %q: %v", o.vgpu, err)
	}
	if o.inputShape != "" {
		for _, p := range strings.Split(o.inputShape, ",") {
			d, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
			if err != nil || d < 1 {
				return nil, run.UsageErrorf("--input-shape: %q: must be positive integers separated by commas (batch excluded), e.g. 3,224,224", o.inputShape)
			}
			r.inputShape = append(r.inputShape, d)
		}
	}
	r.gpusSet = len(o.gpus) > 0
	for _, g := range o.gpus {
		g = strings.TrimSpace(g)
		if g == "" {
			continue
		}
		spec, err := gpus.Lookup(g)
		if err != nil && o.steps != "" {
			// A step log's GPU needs no spec: its times are measured.
			spec, err = gpus.Spec{Name: g}, nil
		}
		if err != nil {
			return nil, run.UsageErrorf("--gpu: %v", err)
		}
		if !slices.Contains(r.gpus, spec.Name) {
			r.gpus = append(r.gpus, spec.Name)
		}
	}
	if r.opt.backend == "trt" && len(r.gpus) != 1 {
		return nil, run.UsageErrorf("--backend trt: --gpu must name the one GPU type the engine ran on (e.g. --gpu L4)")
	}
	if r.opt.backend == "trt" && len(r.batches) > 1 {
		return nil, run.UsageErrorf("--backend trt: --batch must be the single batch size the engine was profiled at")
	}
	if err := r.parseLLM(cmd); err != nil {
		return nil, err
	}
	if err := checkImportFlags(cmd, o); err != nil {
		return nil, err
	}
	if o.out == "" {
		return nil, run.UsageErrorf("-o: must name an output file")
	}
	if o.out != "-" {
		if err := formats.CheckWritable(o.out); err != nil {
			return nil, run.UsageErrorf("--out: %q: %v", o.out, err)
		}
	}
	return r, nil
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// parseIntList parses "1-8", "1,2,4" or "1-4,8" into sorted distinct values in [lo, hi].
func parseIntList(s string, lo, hi int) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		a, b, isRange := strings.Cut(part, "-")
		x, err1 := strconv.Atoi(strings.TrimSpace(a))
		y, err2 := x, error(nil)
		if isRange {
			y, err2 = strconv.Atoi(strings.TrimSpace(b))
		}
		if err1 != nil || err2 != nil || x > y {
			return nil, fmt.Errorf("must be integers or ranges like 1-8, separated by commas")
		}
		if x < lo || y > hi {
			return nil, fmt.Errorf("values must be in %d..%d", lo, hi)
		}
		for v := x; v <= y; v++ {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// grid is the (vGPU, batch) grid the flags ask for: nil leaves PPipe's grid.
func (r *profileRun) grid() []roofline.Point {
	if r.batches == nil && r.vgpus == nil {
		return nil
	}
	levels, batches := r.vgpus, r.batches
	if levels == nil {
		levels = []int{1}
	}
	if batches == nil {
		batches = []int{1, 2, 3, 4, 5, 6, 7, 8}
	}
	return roofline.Grid(levels, batches)
}

func (r *profileRun) execute(ctx context.Context, app *App) error {
	var models []formats.ModelProfile
	var llms []formats.LLMProfile
	name, desc := "", ""
	switch {
	case (r.opt.llm != "" || r.opt.steps != "") && r.model == "" && r.opt.zoo == "" && (r.opt.backend == "" || r.opt.backend == "roofline"):
		// LLMs only.
	case r.opt.backend == "trt":
		mp, err := r.importTRT()
		if err != nil {
			return err
		}
		models = append(models, *mp)
		name, desc = mp.Name, "imported from trtexec exports"
	case r.model == "" && r.opt.zoo == "" && r.opt.backend != "onnx":
		mps, err := r.demo(ctx, app)
		if err != nil {
			return err
		}
		models = append(models, mps...)
		name, desc = "demo", "the demo CNN: roofline estimates for the demo cluster's GPU types"
	default:
		// One model per --zoo name (or the ONNX file): r.opt.zoo is the one in hand.
		zoos := r.zoos
		if len(zoos) == 0 {
			zoos = []string{""}
		}
		var srcs []string
		for _, z := range zoos {
			r.opt.zoo = z
			g, src, err := r.loadGraph()
			if err != nil {
				return err
			}
			var mp *formats.ModelProfile
			if r.opt.backend == "onnx" {
				mp, err = r.measured(ctx, app, g, src, nil)
			} else {
				mp, err = r.analytic(app, g, src)
			}
			if err != nil {
				return err
			}
			models = append(models, *mp)
			srcs = append(srcs, src)
			name, desc = mp.Name, mp.Backend+" profile of "+src
		}
		if len(models) > 1 {
			name, desc = "zoo", models[0].Backend+" profiles of "+strings.Join(srcs, ", ")
		}
	}
	if r.opt.llm != "" || r.opt.steps != "" {
		ls, err := r.llmProfiles(app)
		if err != nil {
			return err
		}
		llms = ls
		if r.note != "" {
			app.Infof("%s", r.note)
		}
		if name == "" {
			name, desc = "llm", "LLM profiles"
		}
	}
	doc := profiler.NewProfile(name, desc, models, llms)
	warnNoisyPoints(app, doc)
	for _, w := range formats.PWLWarnings(doc) {
		fmt.Fprintf(app.Err, "warning: %s\n", w)
	}
	if r.opt.out == "-" {
		// The profile itself on stdout (validated first), for pipes.
		if errs := doc.ValidateFor(r.use); len(errs) > 0 {
			return run.CheckFailed(fmt.Errorf("generated profile does not validate (a bug): %w", errs))
		}
		data, err := formats.Marshal(doc)
		if err != nil {
			return err
		}
		if _, err = app.Out.Write(data); err != nil {
			return err
		}
		writeExplain(app.Err, r.explained) // stdout holds the profile
		return nil
	}
	if err := writeProfile(r.opt.out, doc, r.use); err != nil {
		var el formats.ErrorList
		if errors.As(err, &el) {
			return run.CheckFailed(fmt.Errorf("generated profile does not validate (a bug): %w", err))
		}
		return err
	}
	app.Infof("profile: wrote %s", r.opt.out)
	return r.summary(app, doc)
}

// warnNoisyPoints names, on stderr, the measured points plan solve will find off the monotone
// order of their neighbours (formats.FitProfile); the profile is written as
// measured.
func warnNoisyPoints(app *App, doc *formats.Profile) {
	cp := *doc
	cp.Models = make([]formats.ModelProfile, len(doc.Models))
	for i, m := range doc.Models {
		m.Latency = append([]formats.LatencyEntry(nil), m.Latency...)
		cp.Models[i] = m
	}
	for _, w := range formats.FitProfile(&cp) {
		fmt.Fprintf(app.Err, "warning: %s (the profile keeps the measurement)\n", w)
	}
}

// loadGraph returns the IR of the zoo model or ONNX file, and a source label.
func (r *profileRun) loadGraph() (*graph.Graph, string, error) {
	if r.opt.zoo != "" {
		g, err := zoo.Build(r.opt.zoo)
		if err != nil {
			return nil, "", run.UsageError(err)
		}
		return g, "zoo:" + strings.ToLower(r.opt.zoo), nil
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

func (r *profileRun) analytic(app *App, g *graph.Graph, src string) (*formats.ModelProfile, error) {
	app.Infof("profile: roofline estimate of %s (%d layers, %.1f GFLOPs) on %s", g.Name, len(g.Nodes), g.TotalFLOPs()/1e9, strings.Join(r.roofGPUs(), ", "))
	mp, err := roofline.Profile(g, roofline.Options{
		GPUs: r.roofGPUs(), DefaultGrid: r.grid(), Blocks: r.opt.blocks, Method: r.method,
		Seed: r.opt.seed, Source: src, Precision: gpus.Precision(r.opt.precision),
	})
	if err != nil {
		return nil, err
	}
	return mp, nil
}

// demo is the no-model case: the embedded demo's analytic profile for the demo cluster (or
// for --gpu), plus a CPU measurement when ONNX Runtime is available.
func (r *profileRun) demo(ctx context.Context, app *App) ([]formats.ModelProfile, error) {
	var mp *formats.ModelProfile
	if r.gpusSet || r.grid() != nil || r.opt.blocks != 10 || r.method != partition.MinTraffic || r.opt.seed != profiler.DemoSeed || r.opt.precision != "" {
		g, src, err := r.loadGraph()
		if err != nil {
			return nil, err
		}
		if mp, err = r.analytic(app, g, src); err != nil {
			return nil, err
		}
	} else {
		c, err := demo.Cluster()
		if err != nil {
			return nil, err
		}
		app.Infof("profile: no model given: the demo CNN, roofline estimates for the demo cluster (%s)", clusterTypes(c))
		doc, err := profiler.DemoProfile(c)
		if err != nil {
			return nil, err
		}
		mp = &doc.Models[0]
	}
	out := []formats.ModelProfile{*mp}
	if r.opt.backend == "roofline" {
		return out, nil
	}
	if err := measure.Available(); err != nil {
		app.Infof("profile: skipping the CPU measurement: %v", err)
		return out, nil
	}
	g, src, err := r.loadGraph()
	if err != nil {
		return nil, err
	}
	cpu, err := r.measured(ctx, app, g, src, mp.Blocks)
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
func (r *profileRun) measured(ctx context.Context, app *App, g *graph.Graph, src string, blocks []formats.Block) (*formats.ModelProfile, error) {
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
		app.Infof("profile: materializing %s as ONNX (random weights, seed %d)", g.Name, r.opt.seed)
		if data, err = onnx.Build(g, r.opt.seed); err != nil {
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
		est, err := roofline.Profile(mg, roofline.Options{GPUs: ref, DefaultGrid: []roofline.Point{{VGPU: 1, Batch: 1}}, Blocks: r.opt.blocks, Method: r.method, Noise: -1})
		if err != nil {
			return nil, err
		}
		blocks = est.Blocks
		part = &partition.Result{Blocks: est.Blocks, CutBytes: est.CutBytes, Info: *est.Partition}
	}
	batches := r.batches
	if batches == nil {
		batches = []int{1, 2, 4, 8}
		if r.model == "" && r.opt.zoo == "" {
			// The demo is sized for GPUs; keep its CPU pass short.
			batches = []int{1}
		}
	}
	mo := measure.Options{Model: data, Graph: mg, Blocks: blocks, Batches: batches, Device: r.opt.device, TRT: r.opt.useTRT, Seed: r.opt.seed}
	if r.vgpus != nil && r.opt.device != "cpu" {
		mo.VGPU = r.vgpus
	}
	if r.model == "" && r.opt.zoo == "" {
		mo.Warmup, mo.MinRepeats, mo.MaxTime = 1, 3, 2*time.Second
	}
	// The bar shows before the first measurement ends; its total comes with the first step.
	bar := progressline.NewTask(app.Err, app.Quiet, "profile: measuring "+g.Name+" on "+r.opt.device, "measurements", 0)
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
	label := r.opt.device
	if r.opt.device != "cpu" && len(r.gpus) == 1 {
		label = r.gpus[0]
	}
	mp := &formats.ModelProfile{
		Name:        g.Name,
		Backend:     "onnx",
		Source:      src,
		Device:      r.opt.device,
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
	prof, err := formats.ReadBytes(r.opt.trtProfile)
	if err != nil {
		return nil, run.UsageError(err)
	}
	var layers []byte
	if r.opt.trtLayers != "" {
		if layers, err = formats.ReadBytes(r.opt.trtLayers); err != nil {
			return nil, run.UsageError(err)
		}
	}
	batch := 1
	if len(r.batches) == 1 {
		batch = r.batches[0]
	}
	name := strings.TrimSuffix(filepath.Base(r.opt.trtProfile), filepath.Ext(r.opt.trtProfile))
	src := r.opt.trtProfile
	if r.opt.trtLayers != "" {
		src += "," + r.opt.trtLayers
	}
	mp, err := trt.Import(prof, layers, trt.ImportOptions{Name: name, Source: src, GPU: r.gpus[0], Batch: batch, Blocks: r.opt.blocks, Method: r.method})
	if err != nil {
		return nil, run.UsageErrorf("%s: %v", src, err)
	}
	return mp, nil
}

// profileRow is one summary line.
type profileRow struct {
	Model   string    `json:"model"`
	Device  string    `json:"device"`
	VGPU    int       `json:"vgpu"`
	Batch   int       `json:"batch"`
	TotalMs float64   `json:"total_ms"`
	BlockUs []float64 `json:"block_us"`
}

type llmRow struct {
	Model      string  `json:"model"`
	GPU        string  `json:"gpu"`
	GPUs       int     `json:"gpus"`
	DecodeMs   float64 `json:"decode_ms"`
	Throughput float64 `json:"throughput_tokens_per_s"`
	KVTokens   int64   `json:"kv_capacity_tokens"`
}

func (r *profileRun) summary(app *App, doc *formats.Profile) error {
	var rows []profileRow
	for _, m := range doc.Models {
		for _, e := range m.Latency {
			rows = append(rows, profileRow{Model: m.Name, Device: e.GPU, VGPU: e.VGPU, Batch: e.Batch, TotalMs: e.WholeUs() / 1000, BlockUs: e.BlockUs})
		}
	}
	var lrows []llmRow
	for _, l := range doc.LLMs {
		lrows = append(lrows, llmRow{l.Model, l.GPU, l.GPUCount, l.DecodeUsPerToken / 1000, l.ThroughputTokensPerS, l.KVCapacityTokens})
	}
	if app.JSONOutput() {
		return app.WriteJSON(struct {
			File    string       `json:"file"`
			Blocks  []profileRow `json:"blocks,omitempty"`
			LLMs    []llmRow     `json:"llms,omitempty"`
			Explain []llmExplain `json:"explain,omitempty"`
		}{r.opt.out, rows, lrows, r.explained})
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
		app.Table([]string{"model", "device", "vgpu", "batch", "total ms", "block µs"}, tab)
	}
	if len(lrows) > 0 {
		var tab [][]string
		for _, l := range lrows {
			tab = append(tab, []string{l.Model, l.GPU, strconv.Itoa(l.GPUs), strconv.FormatFloat(l.DecodeMs, 'f', 1, 64),
				strconv.FormatFloat(l.Throughput, 'f', 0, 64), strconv.FormatInt(l.KVTokens, 10)})
		}
		app.Table([]string{"llm", "gpu", "gpus", "decode ms", "tokens/s", "kv tokens"}, tab)
	}
	writeExplain(app.Out, r.explained)
	return nil
}
