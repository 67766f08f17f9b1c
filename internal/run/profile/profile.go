// Package profile is `plan profile`'s work: it measures or estimates the per-block latency
// of a DNN (a zoo architecture, an ONNX file, trtexec exports, or the embedded demo CNN) on
// the roofline, ONNX Runtime or TensorRT backends, builds LLM profiles (the analytic model's
// estimates, an imported profile, or one fitted to a measured engine step log), and writes
// the validated profile.json with a summary.
package profile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/profiler"
	"github.com/plan-dev/plan/profiler/gpus"
	"github.com/plan-dev/plan/profiler/llm"
	"github.com/plan-dev/plan/profiler/measure"
	"github.com/plan-dev/plan/profiler/partition"
	"github.com/plan-dev/plan/profiler/roofline"
	"github.com/plan-dev/plan/profiler/zoo"
)

// Args are `plan profile`'s inputs, in all its modes (a DNN, the demo, trtexec exports,
// LLM estimates, a step log to import).
type Args struct {
	// Model is the ONNX file to profile (the positional MODEL.onnx; default "": a zoo
	// architecture, or the demo CNN).
	Model string
	// Zoo names zoo architectures, comma-separated (--zoo; LLMs among them go to LLM).
	Zoo string
	// Backend is onnx, roofline or trt (--backend; default "": onnx for a Model, trt with
	// TRTProfile, roofline otherwise).
	Backend string
	// Device is the onnx backend's device, cpu or cuda:N (--device; default "cpu").
	Device    string
	DeviceSet bool
	// GPUs are the GPU types of roofline estimates (--gpu; default L4,P4, with LLM
	// A10,A100,H100).
	GPUs []string
	// Batch and VGPU are the batch sizes and vGPU slice levels, as 1-8 or 1,2,4 (--batch,
	// --vgpu; default PPipe's grid).
	Batch, VGPU string
	// Blocks is the number of blocks to pre-partition into (--blocks; default 10).
	Blocks int
	// Partition is the pre-partitioning, greedy or min-traffic (--partition; default
	// "min-traffic").
	Partition string
	// InputShape is the per-sample input shape of an ONNX model with dynamic dimensions,
	// as 3,224,224 (--input-shape).
	InputShape string
	// TRTProfile and TRTLayers are trtexec's --exportProfile and --exportLayerInfo JSON
	// (--trt-profile, --trt-layers; backend trt).
	TRTProfile, TRTLayers string
	// LLM names LLM profiles: catalogue names, comma-separated, "all", or a profile file
	// to import (--llm).
	LLM string
	// TP lists tensor-parallel degrees, as 1,2,4,8 (--tp; default the smallest that fits).
	TP    string
	TPSet bool
	// Link is the tensor-parallel interconnect: auto, nvlink or pcie (--link; default
	// "auto").
	Link    string
	LinkSet bool
	// KVCacheDtype is --kv-cache-dtype: vLLM's KV cache dtype for --llm estimates ("" =
	// auto, BF16; fp8, fp8_e4m3, fp8_e5m2).
	KVCacheDtype string
	// Quantization is --quantization (the weights' dtype; "" = the checkpoint's), and
	// ExpertParallel --expert-parallel, for --llm estimates.
	Quantization   string
	ExpertParallel bool
	// LLMConfigs are --llm-config paths: Hugging Face config.json files, or directories of
	// them, each a dense model profiled as --llm's catalogue names are.
	LLMConfigs []string
	// Explain prints each roofline LLM profile's step time by term (--explain).
	Explain bool
	// Import is a measured engine step log (CSV or JSONL) to fit an LLM profile's
	// iteration curves to (--import).
	Import string
	// GPUCount is the GPUs the step log's engine ran on (--gpu-count; default 0: the log's,
	// else the fewest that hold a known model, else 1).
	GPUCount    int
	GPUCountSet bool
	// KVCapacityTokens is the step log's engine's KV capacity in tokens
	// (--kv-capacity-tokens; default 0: the log's, else the analytic estimate).
	KVCapacityTokens    int64
	KVCapacityTokensSet bool
	// Precision is the roofline arithmetic: fp32, tf32 or fp16 (--precision; default "":
	// TF32 where the GPU has it, else FP32).
	Precision string
	// TRT puts ONNX Runtime's TensorRT execution provider in front of CUDA (--trt).
	TRT bool
	// Seed seeds the roofline tie-breaking noise and measured input data (--seed; default
	// profiler.DemoSeed).
	Seed int64
	// Out is the output file (-o; default "profile.json"; "-" writes the profile to stdout
	// instead of the summary).
	Out string
	// Calibrate is a measured run to fit one LLM profile to (--calibrate RESULT.json: `vllm
	// bench serve --save-result --save-detailed`'s JSON, or plan load's); the profile is
	// Profile's entry ProfileModel, or the estimate of LLM on GPUs at TP (calibrate.go).
	Calibrate []string
	// VLLMLog is a vLLM server's start-up log (--vllm-log): its version, non-default
	// arguments and KV capacity fill what the flags leave unset (serverlog.go).
	VLLMLog string
	// KVFrom says where KVCapacityTokens came from when not --kv-capacity-tokens (the
	// log's line).
	KVFrom string
	// Strict makes any warning of the fit (calibrate.Warning: too few requests, a factor
	// near a bound, a negative overhead, a held-out error that rose, a KV mismatch) an exit-2
	// error with nothing written (--strict).
	Strict bool
	// Profile is the LLM profile file to calibrate (--profile) and ProfileModel its entry
	// (--model: MODEL, MODEL@GPU or MODEL@NxGPU; "" = its only one).
	Profile, ProfileModel string
	// Systems is the system registry whose engine replays the run (nil: the in-tree
	// systems).
	Systems *systems.Registry
	// Engine are the vLLM server settings given as flags (--vllm-version, --max-num-seqs,
	// --max-num-batched-tokens, --max-model-len, --gpu-memory-utilization, --block-size,
	// --[no-]enable-prefix-caching; nil: none), EngineFlags their names: every LLM path
	// applies them over its defaults, or refuses them by name (engineflags.go).
	Engine      *formats.LLMEngine
	EngineFlags []string
}

// profileRun is the parsed, validated form of the options.
type profileRun struct {
	opt        Args
	model      string // ONNX path, "" when none
	gpus       []string
	gpusSet    bool
	batches    []int
	vgpus      []int
	method     partition.Method
	inputShape []int64
	// use is what the written profile serves: planning, or (an engine-only profile from a
	// step log, import.go) one engine's replay.
	use formats.ProfileUse
	// note is said on stderr once the profile is built (an engine-only import).
	note     string
	llmNames []string // catalogue models --llm names ("all" expanded); nil for an import
	// llmModels are the models --llm-config reads (Hugging Face config.json files).
	llmModels []llm.Model
	zoos      []string // the zoo architectures --zoo names (not its LLMs), in order
	tps       []int    // --tp degrees; nil picks the smallest that fits
	link      roofline.Link
	explained []llmExplain // --explain: filled by llmProfiles
	// ctx is the command's context: reading and profiling many --llm-config models stops
	// when it is cancelled (SIGINT, SIGTERM).
	ctx context.Context
	// configNotes are said on stderr once the LLMs are profiled: what --llm-config did with
	// a config the user should know of (a model renamed, an engine id left empty).
	configNotes []string
}

// parse checks every flag before any work starts, so bad input writes nothing.
func parse(ctx context.Context, a Args) (*profileRun, error) {
	r := &profileRun{opt: a, use: formats.UsePlan, model: a.Model, ctx: ctx}
	if r.model != "" && a.Zoo != "" {
		return nil, run.UsageErrorf("give either MODEL.onnx or --zoo, not both")
	}
	// --zoo names one or more models (a comma list, or repeated); LLMs live in the
	// zoo too (plan profile --zoo NAME --gpu A100) and go to the LLM profiles.
	var zooLLMs []string
	for _, z := range strings.Split(a.Zoo, ",") {
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
		if a.LLM != "" {
			return nil, run.UsageErrorf("--zoo %s is an LLM: drop --llm", strings.Join(zooLLMs, ","))
		}
		r.opt.LLM = strings.Join(zooLLMs, ",")
	}
	a.Zoo = strings.Join(r.zoos, ",")
	r.opt.Zoo = ""
	if len(r.zoos) > 0 {
		r.opt.Zoo = r.zoos[0]
	}
	switch gpus.Precision(a.Precision) {
	case "", gpus.FP32, gpus.TF32, gpus.FP16:
	default:
		return nil, run.UsageErrorf("--precision: %q: must be fp32, tf32 or fp16", a.Precision)
	}
	switch a.Backend {
	case "":
		if r.model != "" {
			r.opt.Backend = "onnx"
		} else if a.TRTProfile != "" {
			r.opt.Backend = "trt"
		}
	case "onnx", "roofline", "trt":
	default:
		return nil, run.UsageErrorf("--backend: %q: must be onnx, roofline or trt", a.Backend)
	}
	if r.opt.Backend == "trt" {
		if a.TRTProfile == "" {
			return nil, run.UsageErrorf("--backend trt: needs --trt-profile (trtexec --exportProfile JSON)")
		}
		if r.model != "" || a.Zoo != "" {
			return nil, run.UsageErrorf("--backend trt: imports trtexec exports; drop MODEL.onnx / --zoo")
		}
	} else if a.TRTProfile != "" || a.TRTLayers != "" {
		return nil, run.UsageErrorf("--trt-profile/--trt-layers: only with --backend trt")
	}
	if _, _, err := measure.ParseDevice(a.Device); err != nil {
		return nil, run.UsageErrorf("--device: %q: %v", a.Device, err)
	}
	if a.TRT && (r.opt.Backend != "onnx" || !strings.HasPrefix(a.Device, "cuda")) {
		return nil, run.UsageErrorf("--trt: needs --backend onnx (or a MODEL.onnx) and --device cuda:N")
	}
	if a.DeviceSet && r.opt.Backend != "onnx" && !(r.model == "" && a.Zoo == "" && r.opt.Backend == "") {
		return nil, run.UsageErrorf("--device: only the onnx backend runs on a device (use --gpu for roofline estimates)")
	}
	var err error
	if r.method, err = partition.ParseMethod(a.Partition); err != nil {
		return nil, run.UsageErrorf("--partition: %q: must be greedy or min-traffic", a.Partition)
	}
	if a.Blocks < 1 || a.Blocks > 1000 {
		return nil, run.UsageErrorf("--blocks: %d: must be in 1..1000", a.Blocks)
	}
	if r.batches, err = parseIntList(a.Batch, 1, 4096); err != nil {
		return nil, run.UsageErrorf("--batch: %q: %v", a.Batch, err)
	}
	if r.vgpus, err = parseIntList(a.VGPU, 1, 4); err != nil {
		return nil, run.UsageErrorf("--vgpu: %q: %v", a.VGPU, err)
	}
	if a.InputShape != "" {
		for _, p := range strings.Split(a.InputShape, ",") {
			d, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
			if err != nil || d < 1 {
				return nil, run.UsageErrorf("--input-shape: %q: must be positive integers separated by commas (batch excluded), e.g. 3,224,224", a.InputShape)
			}
			r.inputShape = append(r.inputShape, d)
		}
	}
	r.gpusSet = len(a.GPUs) > 0
	for _, g := range a.GPUs {
		g = strings.TrimSpace(g)
		if g == "" {
			continue
		}
		spec, err := gpus.Lookup(g)
		if err != nil && a.Import != "" {
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
	if r.opt.Backend == "trt" && len(r.gpus) != 1 {
		return nil, run.UsageErrorf("--backend trt: --gpu must name the one GPU type the engine ran on (e.g. --gpu L4)")
	}
	if r.opt.Backend == "trt" && len(r.batches) > 1 {
		return nil, run.UsageErrorf("--backend trt: --batch must be the single batch size the engine was profiled at")
	}
	if err := r.parseLLM(); err != nil {
		return nil, err
	}
	if err := checkImportFlags(a); err != nil {
		return nil, err
	}
	if a.Out == "" {
		return nil, run.UsageErrorf("-o: must name an output file")
	}
	if a.Out != "-" {
		if err := formats.CheckWritable(a.Out); err != nil {
			return nil, run.UsageErrorf("--out: %q: %v", a.Out, err)
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

// Run builds the profile a asks for, writes it to a.Out (validated, atomically) and prints
// a summary, or with Out "-" writes the profile to stdout.
func Run(ctx context.Context, a Args, io *run.IO) error {
	if a.VLLMLog != "" {
		var err error
		if a, err = applyServerLog(a, io); err != nil {
			return err
		}
	}
	if err := checkEngineFlags(a); err != nil {
		return err
	}
	if len(a.Calibrate) > 0 {
		return runCalibrate(ctx, a, io)
	}
	if err := checkCalibrateFlags(a); err != nil {
		return err
	}
	r, err := parse(ctx, a)
	if err != nil {
		return err
	}
	return r.execute(ctx, io)
}

func (r *profileRun) execute(ctx context.Context, io *run.IO) error {
	var models []formats.ModelProfile
	var llms []formats.LLMProfile
	name, desc := "", ""
	switch {
	case (r.opt.LLM != "" || r.opt.Import != "" || len(r.opt.LLMConfigs) > 0) && r.model == "" && r.opt.Zoo == "" && (r.opt.Backend == "" || r.opt.Backend == "roofline"):
		// LLMs only.
	case r.opt.Backend == "trt":
		mp, err := r.importTRT()
		if err != nil {
			return err
		}
		models = append(models, *mp)
		name, desc = mp.Name, "imported from trtexec exports"
	case r.model == "" && r.opt.Zoo == "" && r.opt.Backend != "onnx":
		mps, err := r.demo(ctx, io)
		if err != nil {
			return err
		}
		models = append(models, mps...)
		name, desc = "demo", "the demo CNN: roofline estimates for the demo cluster's GPU types"
	default:
		// One model per --zoo name (or the ONNX file): r.opt.Zoo is the one in hand.
		zoos := r.zoos
		if len(zoos) == 0 {
			zoos = []string{""}
		}
		var srcs []string
		for _, z := range zoos {
			r.opt.Zoo = z
			g, src, err := r.loadGraph()
			if err != nil {
				return err
			}
			var mp *formats.ModelProfile
			if r.opt.Backend == "onnx" {
				mp, err = r.measured(ctx, io, g, src, nil)
			} else {
				mp, err = r.analytic(io, g, src)
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
	if r.opt.LLM != "" || r.opt.Import != "" || len(r.opt.LLMConfigs) > 0 {
		ls, err := r.llmProfiles(io)
		if err != nil {
			return err
		}
		llms = ls
		if r.note != "" {
			io.Infof("%s", r.note)
		}
		if name == "" {
			name, desc = "llm", "LLM profiles"
		}
	}
	doc := profiler.NewProfile(name, desc, models, llms)
	warnNoisyPoints(io, doc)
	for _, w := range formats.PWLWarnings(doc) {
		fmt.Fprintf(io.Err, "warning: %s\n", w)
	}
	if r.opt.Out == "-" {
		// The profile itself on stdout (validated first), for pipes.
		if errs := doc.ValidateFor(r.use); len(errs) > 0 {
			return run.CheckFailed(fmt.Errorf("generated profile does not validate (a bug): %w", errs))
		}
		data, err := formats.Marshal(doc)
		if err != nil {
			return err
		}
		if _, err = io.Out.Write(data); err != nil {
			return err
		}
		writeExplain(io.Err, r.explained) // stdout holds the profile
		return nil
	}
	if err := writeProfile(r.opt.Out, doc, r.use); err != nil {
		var el formats.ErrorList
		if errors.As(err, &el) {
			return run.CheckFailed(fmt.Errorf("generated profile does not validate (a bug): %w", err))
		}
		return err
	}
	io.Infof("profile: wrote %s", r.opt.Out)
	return r.summary(io, doc)
}

// warnNoisyPoints names, on stderr, the measured points plan solve will find off the monotone
// order of their neighbours (formats.FitProfile); the profile is written as
// measured.
func warnNoisyPoints(io *run.IO, doc *formats.Profile) {
	cp := *doc
	cp.Models = make([]formats.ModelProfile, len(doc.Models))
	for i, m := range doc.Models {
		m.Latency = append([]formats.LatencyEntry(nil), m.Latency...)
		cp.Models[i] = m
	}
	for _, w := range formats.FitProfile(&cp) {
		fmt.Fprintf(io.Err, "warning: %s (the profile keeps the measurement)\n", w)
	}
}
