package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/plan-dev/plan/internal/run"
	runprofile "github.com/plan-dev/plan/internal/run/profile"

	"github.com/plan-dev/plan/profiler"
	"github.com/plan-dev/plan/profiler/llm"
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
	// (run/profile).
	gpuCount  int
	kvTokens  int64
	precision string
	useTRT    bool
	seed      int64
	out       string
	// calibrate, profile and model fit one LLM profile to a measured run (run/profile's
	// calibrate.go).
	llmConfigs   []string
	kvCacheDtype string
	quantization string
	expertPar    bool
	// tpAlias and expertParAlias are vLLM's names of --tp and --expert-parallel.
	tpAlias        string
	expertParAlias bool
	calibrate      []string
	strict         bool
	vllmLog        string
	profile        string
	model          string
	// engine are vLLM's server flags (profile_engine.go).
	engine engineFlags
}

// profileLong is plan profile's help.
const profileLong = `Profile a DNN: group its layers into blocks (pre-partitioning), compute the bytes crossing
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
import; the catalogue is 28 embedded Hugging Face configs (profiler/llm/catalogue: Llama,
Qwen, Mistral, Gemma, Phi dense models; Mixtral, Qwen3-MoE, Llama-4, gpt-oss, DeepSeek-V3
mixture-of-experts). A name may be the Hugging Face id the server runs: a catalogue model's
own, or one of a catalogue model's shapes under another name (its base or chat variant,
another organisation's copy, a quantized re-publication the catalogue lists), profiled as
that checkpoint, named by its repository, with hf_model the id. --llm-config adds models a user brings as config.json files
(repeatable; a directory of them): dense decoders (llama, mistral, qwen2/3, phi3, gemma3,
...) and mixture-of-experts ones (mixtral, qwen2_moe/qwen3_moe, llama4, gpt_oss,
deepseek_v3 with its latent attention, ...), FP8, MXFP4 and NVFP4 checkpoints
(quantization_config), named by their directories (NAME-config where NAME is a catalogue
model the config is not), with hf_model the config's _name_or_path when it is a Hugging Face
id (never a local path: set it in the profile then); INT4/INT8
checkpoints are refused naming the field. --quantization fp8 runs a BF16 checkpoint as vLLM's online FP8 (half the
weight bytes, FP8 GEMMs); --expert-parallel places a mixture-of-experts model's experts
whole on its --tp GPUs (vLLM's --enable-expert-parallel; the experts must divide by the
degree). Analytic LLM profiles time each step from NVIDIA's measured vLLM kernel tables on
the H100, H200, B200, A100 and L40S (GEMMs, attention, fused MoE layers, vLLM's all-reduce;
step_times "measured"),
and from a roofline calibrated on the nearest measured architecture elsewhere ("estimated",
with its error band); the KV capacity is vLLM's start-up budget (--kv-cache-dtype fp8 halves
a token's bytes). They are at the smallest tensor-parallel degree that fits unless --tp
lists degrees (1-8; those a model cannot be sharded over or whose GPUs cannot hold it are
skipped, named on stderr), over NVLink where the GPU has it unless --link pcie. --explain prints
each profile's step model by term (gemm, attention, moe, allreduce, elementwise, overhead) at
prefill of 512/2048/8192 tokens and decode of 1/8/32/128 sequences at 2,048 tokens of context,
the measured-table point each term came from, and the KV budget term by term.
--llm with --import STEPS replaces the one LLM profile's iteration curves with measured step
times: a CSV (header tokens,prefill_tokens,seconds, optionally context_tokens) or JSONL
table of engine steps; the decode-only and prefill-containing curves are fitted as measured
(points falling by more than 10% are named on stderr and kept), with a per-context-token
term when the steps give their context. The log may say which engine ran it (columns model,
gpu, gpu_count, kv_capacity_tokens; or --llm, --gpu, --gpu-count, --kv-capacity-tokens):
any model on any GPU count. A model and GPU the analytic model knows get its planner
fields; any other gets an engine-only profile, for plan simulate --llm.
--calibrate RESULT.json fits one LLM profile to a run measured on the real server: the JSON
of vllm bench serve --save-result --save-detailed (or plan load's), with each request's
input_lens, output_lens, ttfts and itls, and its send time (start_times; without them the
arrivals are regenerated from request_rate, burstiness and max_concurrency, seeded by
--seed). The profile is --profile FILE's entry (--model MODEL, MODEL@GPU or MODEL@NxGPU where
it holds several) or the analytic estimate of --llm MODEL on --gpu GPU at --tp N; its engine
block is the server's settings (max_model_len, max_num_seqs, max_num_batched_tokens). The
run's requests are replayed through the engine plan simulate --llm runs, and three factors —
a prefill scale, a decode scale and a per-step overhead in µs — are fitted to the first half
of the requests' TTFT and inter-token latency; the second half is held out. The calibrated
profile (corrected iteration curves, and a calibration block recording the run, the factors
and the errors) is written with -o; the median errors before and after, on both halves, go
to stdout. --calibrate is repeatable (or a directory of *.json runs): one joint fit of runs
of one deployment, each run's first half fitted and second half held out, each run's errors
reported. A factor the runs do not constrain (prompts too short for the prefill scale, too
few requests of two or more output tokens for the decode scale) is held at 1 and said so.
Each search replay runs a run's first 1,000 requests at most; a run holds at most 100,000
requests and 256 MiB. A request with an error recorded is left out and counted; one without
must have output tokens, at most output tokens - 1 itls and finite times >= 0 (exit 2
naming the request and field). The fit warns by name — few-requests (under 64),
near-bound (a factor within 10% of its range's end), negative-overhead, overhead-held
(the runs' decode steps span too little to tell the decode scale from a per-step overhead:
the overhead is held at 0), held-out-worse, kv-mismatch (preemptions in the replay the measured streams do not show, or the reverse),
unfinished — and --strict makes any warning exit 2 with nothing written.
--vllm-log FILE reads a vLLM server's start-up log — its version, its non-default args
(tensor_parallel_size, max_num_seqs, max_num_batched_tokens, max_model_len, block_size,
gpu_memory_utilization, enable_prefix_caching, enable_chunked_prefill, max_num_partial_prefills,
scheduling_policy, swap_space, disable_hybrid_kv_cache_manager, kv_cache_dtype, quantization,
enable_expert_parallel) and its KV size (V1's "GPU KV cache size: N tokens", V0's "# GPU
blocks: N" times the block size) — on every LLM path but --calibrate --profile: explicit
flags win over the log, the log over the defaults; --kv-capacity-tokens over the log's KV
size, the log's over the estimate. Args plan does not model (enforce_eager, pipeline or
data parallelism, cpu_offload_gb, a kv_transfer_config) are named in a warning. With no
model named (--llm, --llm-config, --import) it profiles the model the server ran: its model
argument, a Hugging Face id as --llm takes it.
The profile is validated and written atomically; a summary table goes to stdout.`

// profileExamples are plan profile's examples (each run by internal/base/readme's example test).
const profileExamples = `  plan profile                                   # the demo model
  plan profile --zoo efficientnet-b8 --gpu L4,P4,T4,V100 -o effnet.json
  plan profile --zoo resnet50 --batch 1-8 --vgpu 1-4 --partition greedy
  plan profile model.onnx --device cpu --batch 1,2,4 --input-shape 3,224,224
  plan profile model.onnx --backend roofline --gpu A100
  plan profile --backend trt --trt-profile prof.json --trt-layers layers.json --gpu L4
  plan profile --llm all --gpu A10,A100,H100 -o llm.json
  plan profile --llm llama-3.1-8b --gpu H100 --tp 2 --kv-cache-dtype fp8 --explain -o llm-fp8.json
  plan profile --llm-config profiler/llm/testdata/configs --gpu H100,A100 -o my-llms.json
  plan profile --llm mixtral-8x7b --gpu H100 --tp 2,4 --expert-parallel --explain -o mixtral-ep.json
  plan profile --llm llama-3.1-70b --gpu H100 --tp 2 --quantization fp8 -o llama70b-fp8.json
  plan profile --llm llama-3.1-8b,llama-3.1-70b --gpu H100 --tp 1,2,4,8 --explain
  plan profile --zoo llama-2-70b --gpu A100
  plan profile --llm mistral-7b --gpu A100 --import steps.csv -o llm.json
  plan profile --import llama3-8b-h100-tp2-steps.csv -o engine.json   # model, gpu, gpu_count, kv_capacity_tokens columns
  plan profile --calibrate profiler/llm/calibrate/testdata/vllm-detailed.json --llm llama-3.1-8b --gpu H100 --tp 1 -o calibrated.json
  plan profile --llm llama-3.1-8b --gpu H100 --vllm-log profiler/llm/testdata/serverlogs/v1-0.11.log -o llm-served.json
  plan profile --gpu H100 --vllm-log profiler/llm/testdata/serverlogs/v1-0.11.log -o llm-served.json   # the model the server ran
  plan profile --calibrate profiler/llm/calibrate/testdata/vllm-detailed.json --calibrate profiler/llm/calibrate/testdata/plan-load.json --llm llama-3.1-8b --gpu H100 --vllm-log profiler/llm/testdata/serverlogs/v1-0.11.log -o calibrated.json
  plan profile --llm llama-3.1-8b --gpu H100,A100 -o llm.json && plan profile --calibrate profiler/llm/calibrate/testdata/vllm-detailed.json --profile llm.json --model llama-3.1-8b@H100 -o calibrated.json`

func newProfileCmd(app *App) *cobra.Command {
	o := profileOptions{}
	cmd := &cobra.Command{
		Use:     "profile [MODEL.onnx]",
		Short:   "Measure or estimate per-block latency of a model and write profile.json",
		Long:    profileLong,
		Example: profileExamples,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ch := cmd.Flags().Changed
			if ch("tensor-parallel-size") && ch("tp") && o.tp != o.tpAlias {
				return run.UsageErrorf("--tp %s and --tensor-parallel-size %s: the same setting twice, with two values", o.tp, o.tpAlias)
			}
			if ch("tensor-parallel-size") {
				o.tp = o.tpAlias
			}
			engine, engineSet := o.engine.engine(ch)
			if ch("enable-prefix-caching") && ch("no-enable-prefix-caching") {
				return run.UsageErrorf("--enable-prefix-caching and --no-enable-prefix-caching: give one")
			}
			a := runprofile.Args{Engine: engine, EngineFlags: engineSet, Zoo: o.zoo, Backend: o.backend, Device: o.device, DeviceSet: ch("device"), GPUs: o.gpus,
				Batch: o.batch, VGPU: o.vgpu, Blocks: o.blocks, Partition: o.method, InputShape: o.inputShape,
				TRTProfile: o.trtProfile, TRTLayers: o.trtLayers, LLM: o.llm, TP: o.tp, TPSet: ch("tp") || ch("tensor-parallel-size"), Link: o.link,
				LinkSet: ch("link"), KVCacheDtype: o.kvCacheDtype, Quantization: o.quantization, ExpertParallel: o.expertPar || o.expertParAlias, LLMConfigs: o.llmConfigs, Explain: o.explain, Import: o.steps, GPUCount: o.gpuCount, GPUCountSet: ch("gpu-count"),
				KVCapacityTokens: o.kvTokens, KVCapacityTokensSet: ch("kv-capacity-tokens"), Precision: o.precision,
				TRT: o.useTRT, Seed: o.seed, Out: o.out, Calibrate: o.calibrate, Strict: o.strict, VLLMLog: o.vllmLog, Profile: o.profile, ProfileModel: o.model,
				Systems: app.Systems}
			if len(args) == 1 {
				a.Model = args[0]
			}
			return runprofile.Run(cmd.Context(), a, &app.IO)
		},
	}
	f := cmd.Flags()
	listVar(f, &o.zoo, "zoo", "", "profile zoo architectures (comma list; repeatable): "+strings.Join(zoo.Names(), ", "))
	f.StringVar(&o.backend, "backend", "", "onnx, roofline or trt (default: onnx for a MODEL.onnx, roofline otherwise)")
	f.StringVar(&o.device, "device", "cpu", "device for the onnx backend: cpu or cuda:N")
	f.StringSliceVar(&o.gpus, "gpu", nil, "GPU types for roofline estimates, by catalogue name or the product name nvidia-smi reports (NVIDIA H100 80GB HBM3; default L4,P4; A10,A100,H100 for --llm)")
	listVar(f, &o.batch, "batch", "", "batch sizes, e.g. 1-8 or 1,2,4 (default: PPipe's grid, 1-8 on whole GPUs)")
	listVar(f, &o.vgpu, "vgpu", "", "vGPU slice levels, e.g. 1-4 (default: PPipe's grid)")
	f.IntVar(&o.blocks, "blocks", 10, "number of blocks to pre-partition into")
	f.StringVar(&o.method, "partition", "min-traffic", "pre-partitioning: greedy or min-traffic")
	f.StringVar(&o.inputShape, "input-shape", "", "per-sample input shape for ONNX models with dynamic dimensions, e.g. 3,224,224")
	f.StringVar(&o.trtProfile, "trt-profile", "", "trtexec --exportProfile JSON (backend trt)")
	f.StringVar(&o.trtLayers, "trt-layers", "", "trtexec --exportLayerInfo JSON (backend trt; detailed verbosity gives cut sizes)")
	listVar(f, &o.llm, "llm", "", "LLM profiles: comma-separated names of "+strings.Join(llm.Names(), ", ")+", or Hugging Face ids of their shapes; all; or a profile file to import")
	listVar(f, &o.tp, "tp", "", "with --llm: tensor-parallel degrees to profile, e.g. 1,2,4,8 or 1-8 (default: the smallest that fits)")
	f.StringArrayVar(&o.llmConfigs, "llm-config", nil, "an LLM from its Hugging Face config.json (repeatable; or a directory of them): a dense or mixture-of-experts decoder (llama, mistral, qwen2/3, gemma3, mixtral, qwen3_moe, llama4, gpt_oss, ...), named by its directory, profiled as --llm's models are")
	f.StringVar(&o.quantization, "quantization", "", "with --llm/--llm-config: the weights' dtype: auto (the checkpoint's), bf16, fp8 (vLLM's online FP8 of a BF16 checkpoint), mxfp4, nvfp4 (Blackwell only); the exports pass fp8 to vLLM")
	f.StringVar(&o.tpAlias, "tensor-parallel-size", "", "vLLM's name of --tp")
	f.BoolVar(&o.expertParAlias, "enable-expert-parallel", false, "vLLM's name of --expert-parallel")
	addEngineProfileFlags(f, &o.engine)
	f.BoolVar(&o.expertPar, "expert-parallel", false, "with --llm/--llm-config and --tp: place a mixture-of-experts model's experts whole on the GPUs (vLLM's --enable-expert-parallel); dense models and TP 1 are profiled without it")
	f.StringVar(&o.kvCacheDtype, "kv-cache-dtype", "", "with --llm: vLLM's --kv-cache-dtype: auto (BF16) or fp8, fp8_e4m3, fp8_e5m2 (half the KV bytes: twice the capacity, FP8-cache attention kernels; the exports pass it to vLLM)")
	f.StringVar(&o.link, "link", "auto", "with --llm: GPU interconnect for tensor-parallel all-reduces: auto (NVLink where the GPU has it), nvlink or pcie")
	f.BoolVar(&o.explain, "explain", false, "with --llm: print each roofline LLM profile's step time by term")
	f.StringVar(&o.steps, "import", "", "measured engine step times to fit an LLM profile's iteration curves (CSV or JSONL: tokens, prefill_tokens, seconds; optionally model, gpu, gpu_count, kv_capacity_tokens naming the engine, and vllm_version, kv_allocation, release, block_size, enable_prefix_caching, max_num_batched_tokens, max_num_seqs saying how it scheduled: the profile's engine block), for the one model and GPU of --llm/--gpu or of the log (or a one-LLM profile file given as --llm)")
	f.IntVar(&o.gpuCount, "gpu-count", 0, "with --import: the GPUs the engine ran on (tensor parallelism; default: the log's gpu_count, else the fewest that hold a known model, else 1)")
	f.Int64Var(&o.kvTokens, "kv-capacity-tokens", 0, "with --import: the engine's KV capacity in tokens (vLLM's GPU blocks × block size; default: the log's kv_capacity_tokens, else the analytic estimate of a known model)")
	f.BoolVar(&o.useTRT, "trt", false, "onnx backend on cuda:N: put ONNX Runtime's TensorRT execution provider in front of CUDA")
	f.StringVar(&o.precision, "precision", "", "roofline arithmetic: fp32, tf32 or fp16 (default: TF32 where the GPU has it, else FP32, as PPipe's TensorRT builds; only the default is calibrated)")
	f.StringArrayVar(&o.calibrate, "calibrate", nil, "fit one LLM profile (--profile FILE [--model M], or --llm MODEL --gpu GPU [--tp N]) to a measured run: vllm bench serve --save-result --save-detailed JSON (repeatable, or a directory of them: one joint fit, each run's held-out error reported)")
	f.StringVar(&o.vllmLog, "vllm-log", "", "a vLLM server's start-up log: its version, non-default args (tensor_parallel_size, max_num_seqs, max_num_batched_tokens, max_model_len, block_size, gpu_memory_utilization, enable_prefix_caching, enable_chunked_prefill, max_num_partial_prefills, scheduling_policy, swap_space, disable_hybrid_kv_cache_manager, kv_cache_dtype, quantization, enable_expert_parallel) and KV capacity (V1's \"GPU KV cache size: N tokens\", V0's \"# GPU blocks: N\") fill what the flags leave unset, on every LLM path but --calibrate --profile")
	f.BoolVar(&o.strict, "strict", false, "with --calibrate: exit 2, writing nothing, when the fit has any warning (few-requests, near-bound, negative-overhead, overhead-held, held-out-worse, kv-mismatch, unfinished)")
	f.StringVar(&o.profile, "profile", "", "with --calibrate: the LLM profile file to calibrate")
	f.StringVar(&o.model, "model", "", "with --calibrate --profile: its LLM entry, MODEL, MODEL@GPU or MODEL@NxGPU (default: its only one)")
	f.Int64Var(&o.seed, "seed", profiler.DemoSeed, "seed for the roofline tie-breaking noise and measured input data (with --calibrate: for arrivals regenerated from request_rate)")
	f.StringVarP(&o.out, "out", "o", "profile.json", "output file (- writes the profile to stdout instead of the summary)")
	return cmd
}
