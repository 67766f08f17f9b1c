package formats

import (
	"math"
	"strings"
	"testing"
	"time"
)

// One bad-input test per validation rule: start from a good fixture, break one thing (as a
// Go caller can, NaN included) and expect exactly these messages.

type badCase struct {
	name   string
	file   string // good fixture to start from
	mutate func(Document)
	want   []string
}

func cl(f func(*Cluster)) func(Document)  { return func(d Document) { f(d.(*Cluster)) } }
func pr(f func(*Profile)) func(Document)  { return func(d Document) { f(d.(*Profile)) } }
func wl(f func(*Workload)) func(Document) { return func(d Document) { f(d.(*Workload)) } }
func pl(f func(*Plan)) func(Document)     { return func(d Document) { f(d.(*Plan)) } }
func tr(f func(*Trace)) func(Document)    { return func(d Document) { f(d.(*Trace)) } }
func ms(d time.Duration) Duration         { return Duration(d * time.Millisecond) }

var nan = math.NaN()
var inf = math.Inf(1)

func runBad(t *testing.T, cases []badCase) {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("duplicate case name %q", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			doc := loadGood(t, c.file)
			c.mutate(doc)
			got := Validate(doc, inTree).WithFile(c.file)
			var msgs []string
			for _, e := range got {
				msgs = append(msgs, e.Error())
			}
			if strings.Join(msgs, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("got:\n\t%s\nwant:\n\t%s", strings.Join(msgs, "\n\t"), strings.Join(c.want, "\n\t"))
			}
		})
	}
}

func TestValidateCluster(t *testing.T) {
	const f = "cluster.yaml"
	runBad(t, []badCase{
		{"apiVersion", f, cl(func(c *Cluster) { c.APIVersion = "plan/v2" }), []string{`cluster.yaml: apiVersion: "plan/v2": must be plan/v1`}},
		{"kind", f, cl(func(c *Cluster) { c.Kind = "Plan" }), []string{`cluster.yaml: kind: "Plan": must be Cluster`}},
		{"no gpus", f, cl(func(c *Cluster) { c.GPUs, c.Servers = nil, nil }), []string{`cluster.yaml: gpus: must list at least one GPU type`}},
		{"empty type", f, cl(func(c *Cluster) { c.GPUs[1].Type, c.Servers = "", nil }), []string{`cluster.yaml: gpus[1].type: "": must not be empty`}},
		{"duplicate type", f, cl(func(c *Cluster) { c.GPUs[1].Type, c.Servers = "L4", nil }), []string{`cluster.yaml: gpus[1].type: "L4": duplicate GPU type`}},
		{"negative count", f, cl(func(c *Cluster) { c.GPUs[1].Count = -3 }), []string{`cluster.yaml: gpus[1].count: -3: must be >= 0`}},
		{"per_server", f, cl(func(c *Cluster) { c.GPUs[0].PerServer = 0 }), []string{`cluster.yaml: gpus[0].per_server: 0: must be >= 1`}},
		{"memory_bytes", f, cl(func(c *Cluster) { c.GPUs[0].MemoryBytes = -1 }), []string{`cluster.yaml: gpus[0].memory_bytes: -1: must be >= 0`}},
		{"unknown gpu type", f, cl(func(c *Cluster) { c.GPUs[0].Type, c.Servers = "X9", nil }), []string{`cluster.yaml: gpus[0].type: "X9": unknown GPU type (known: P4, T4, V100, A10, L4, L40S, A100, H100, H200, B200); give memory_bytes for a custom type`}},
		{"vgpu level", f, cl(func(c *Cluster) { c.GPUs[0].VGPU = []int{1, 5} }), []string{`cluster.yaml: gpus[0].vgpu[1]: 5: must be in 1..4`}},
		{"class", f, cl(func(c *Cluster) { c.GPUs[0].Class = "medium" }), []string{`cluster.yaml: gpus[0].class: "medium": must be high or low`}},
		{"nic NaN", f, cl(func(c *Cluster) { c.NICGbps = nan }), []string{`cluster.yaml: nic_gbps: NaN: must be > 0`}},
		{"nic_derate", f, cl(func(c *Cluster) { c.NICDerate = 0.5 }), []string{`cluster.yaml: nic_derate: 0.5: must be >= 1 (or omitted)`}},
		{"kv link zero", f, cl(func(c *Cluster) { z := 0.0; c.KVLinkGBps = &z }), []string{`cluster.yaml: kv_link_gbps: 0: must be in (0, 10000] GB/s`}},
		{"kv link NaN", f, cl(func(c *Cluster) { c.KVLinkGBps = &nan }), []string{`cluster.yaml: kv_link_gbps: NaN: must be in (0, 10000] GB/s`}},
		{"host memory", f, cl(func(c *Cluster) { c.HostMemoryBytes = -1 }), []string{`cluster.yaml: host_memory_bytes: -1: must be >= 0`}},
		{"server name", f, cl(func(c *Cluster) { c.Servers[1].Name = "" }), []string{`cluster.yaml: servers[1].name: "": must not be empty`}},
		{"gpu product name", f, cl(func(c *Cluster) { c.GPUs[0].Type, c.Servers = "NVIDIA L4", nil }), []string{`cluster.yaml: gpus[0].type: "NVIDIA L4": unknown GPU type: the catalogue's L4 goes by that name; write L4, or give memory_bytes for a custom type`}},
		{"server gpu", f, cl(func(c *Cluster) { c.Servers[1].GPU = "T4" }), []string{`cluster.yaml: servers[1].gpu: "T4": unknown GPU type: not in gpus[]`}},
		{"server gpus", f, cl(func(c *Cluster) { c.Servers[1].GPUs = 0 }), []string{`cluster.yaml: servers[1].gpus: 0: must be >= 1`}},
		{"server nic", f, cl(func(c *Cluster) { c.Servers[0].NICGbps = nan }), []string{`cluster.yaml: servers[0].nic_gbps: NaN: must be >= 0`}},
		{"node_labels key", f, cl(func(c *Cluster) { c.GPUs[0].NodeLabels = map[string]string{"nvidia.com/gpu product": "x"} }),
			[]string{`cluster.yaml: gpus[0].node_labels: "nvidia.com/gpu product": not a Kubernetes label key ([prefix/]name, name at most 63 of A-Z a-z 0-9 - _ . starting and ending alphanumeric)`}},
		{"node_labels value", f, cl(func(c *Cluster) { c.GPUs[0].NodeLabels = map[string]string{"nvidia.com/gpu.product": "NVIDIA L4"} }),
			[]string{`cluster.yaml: gpus[0].node_labels.nvidia.com/gpu.product: "NVIDIA L4": not a Kubernetes label value (at most 63 of A-Z a-z 0-9 - _ . starting and ending alphanumeric)`}},
	})
}

func TestValidateProfile(t *testing.T) {
	const f = "profile.json"
	r := func(p *Profile) *ModelProfile { return &p.Models[0] } // resnet50: has layers
	y := func(p *Profile) *ModelProfile { return &p.Models[1] } // yolov5s: no layers, p90/cv
	runBad(t, []badCase{
		{"kind", f, pr(func(p *Profile) { p.Kind = "Cluster" }), []string{`profile.json: kind: "Cluster": must be Profile`}},
		{"no models", f, pr(func(p *Profile) { p.Models, p.LLMs = nil, nil }), []string{`profile.json: models: must list at least one model (models or llms)`}},
		{"empty name", f, pr(func(p *Profile) { y(p).Name = "" }), []string{`profile.json: models[1].name: "": must not be empty`}},
		{"duplicate name", f, pr(func(p *Profile) { y(p).Name = "resnet50" }), []string{`profile.json: models[1].name: "resnet50": duplicate name (first at models[0].name)`}},
		{"backend", f, pr(func(p *Profile) { y(p).Backend = "tensorflow" }), []string{`profile.json: models[1].backend: "tensorflow": must be one of onnx, roofline, trt, import`}},
		{"input shape", f, pr(func(p *Profile) { y(p).InputShape[0] = 0 }), []string{`profile.json: models[1].input_shape[0]: 0: must be >= 1`}},
		{"memory", f, pr(func(p *Profile) { y(p).MemoryBytes = -1 }), []string{`profile.json: models[1].memory_bytes: -1: must be >= 0`}},
		{"parts memory", f, pr(func(p *Profile) { y(p).PartsMemoryBytes = []int64{5, -1} }), []string{`profile.json: models[1].parts_memory_bytes[1]: -1: must be >= 0`}},
		{"partition method", f, pr(func(p *Profile) { r(p).Partition.Method = "random" }), []string{`profile.json: models[0].partition.method: "random": must be one of greedy, min-traffic`}},
		{"partition blocks", f, pr(func(p *Profile) { r(p).Partition.Blocks = 0 }), []string{`profile.json: models[0].partition.blocks: 0: must be >= 1`}},
		{"partition bound NaN", f, pr(func(p *Profile) { r(p).Partition.LowerBound = nan }), []string{`profile.json: models[0].partition.lower_bound: NaN: must be >= 0`}},
		{"partition upper < lower", f, pr(func(p *Profile) { r(p).Partition.UpperBound = 1 }), []string{`profile.json: models[0].partition.upper_bound: 1: must be >= lower_bound (1.2)`}},
		{"layer name empty", f, pr(func(p *Profile) { r(p).Layers[2].Name = "" }), []string{`profile.json: models[0].layers[2].name: "": must not be empty`}},
		{"layer name duplicate", f, pr(func(p *Profile) { r(p).Layers[2].Name = "stem" }), []string{`profile.json: models[0].layers[2].name: "stem": duplicate name (first at models[0].layers[0].name)`}},
		{"layer op", f, pr(func(p *Profile) { r(p).Layers[2].Op = "" }), []string{`profile.json: models[0].layers[2].op: "": must not be empty`}},
		{"layer flops", f, pr(func(p *Profile) { r(p).Layers[2].FLOPs = -1 }), []string{`profile.json: models[0].layers[2].flops: -1: must be >= 0`}},
		{"layer bytes Inf", f, pr(func(p *Profile) { r(p).Layers[2].Bytes = inf }), []string{`profile.json: models[0].layers[2].bytes: +Inf: must be >= 0`}},
		{"layer param bytes", f, pr(func(p *Profile) { r(p).Layers[2].ParamBytes = -1 }), []string{`profile.json: models[0].layers[2].param_bytes: -1: must be >= 0`}},
		{"layer output bytes", f, pr(func(p *Profile) { r(p).Layers[2].OutputBytes = -1 }), []string{`profile.json: models[0].layers[2].output_bytes: -1: must be >= 0`}},
		{"layer latency gpu", f, pr(func(p *Profile) { r(p).Layers[2].LatencyUs[""] = 3 }), []string{`profile.json: models[0].layers[2].latency_us[""]: "": GPU type must not be empty`}},
		{"layer latency", f, pr(func(p *Profile) { r(p).Layers[2].LatencyUs["L4"] = -5 }), []string{`profile.json: models[0].layers[2].latency_us.L4: -5: must be >= 0`}},
		{"no blocks", f, pr(func(p *Profile) { y(p).Blocks, y(p).CutBytes = nil, nil }), []string{`profile.json: models[1].blocks: must list at least one block`}},
		{"blocks start", f, pr(func(p *Profile) { y(p).Blocks[0].FirstLayer = 1 }), []string{`profile.json: models[1].blocks[0].first_layer: 1: must be 0: blocks must start at layer 0`}},
		{"blocks contiguous", f, pr(func(p *Profile) { y(p).Blocks[1].FirstLayer = 11 }), []string{`profile.json: models[1].blocks[1].first_layer: 11: must equal blocks[0].end_layer (10): blocks must be contiguous`}},
		{"block empty range", f, pr(func(p *Profile) { y(p).Blocks[2].EndLayer = 17 }), []string{`profile.json: models[1].blocks[2].end_layer: 17: must be > first_layer (17)`}},
		{"block memory", f, pr(func(p *Profile) { y(p).Blocks[2].MemoryBytes = -1 }), []string{`profile.json: models[1].blocks[2].memory_bytes: -1: must be >= 0`}},
		{"blocks cover layers", f, pr(func(p *Profile) { r(p).Layers = r(p).Layers[:7] }), []string{`profile.json: models[0].blocks[3].end_layer: 8: must equal the number of layers (7): blocks must cover every layer`}},
		{"cut_bytes length", f, pr(func(p *Profile) { y(p).CutBytes = y(p).CutBytes[:1] }), []string{`profile.json: models[1].cut_bytes: 1: length must be len(blocks)-1 = 2`}},
		{"cut_bytes negative", f, pr(func(p *Profile) { y(p).CutBytes[1] = -1 }), []string{`profile.json: models[1].cut_bytes[1]: -1: must be >= 0`}},
		{"no latency", f, pr(func(p *Profile) { y(p).Latency = nil }), []string{`profile.json: models[1].latency: must have at least one entry`}},
		{"latency gpu", f, pr(func(p *Profile) { y(p).Latency[5].GPU = "" }), []string{`profile.json: models[1].latency[5].gpu: "": must not be empty`}},
		{"latency vgpu", f, pr(func(p *Profile) { y(p).Latency[5].VGPU = 0 }), []string{`profile.json: models[1].latency[5].vgpu: 0: must be in 1..4`}},
		{"latency batch", f, pr(func(p *Profile) { y(p).Latency[5].Batch = 0 }), []string{`profile.json: models[1].latency[5].batch: 0: must be >= 1`}},
		{"latency duplicate", f, pr(func(p *Profile) { y(p).Latency[5].Batch = 1 }), []string{`profile.json: models[1].latency[5]: (P4, vgpu 1, batch 1): duplicate (gpu, vgpu, batch) entry (first at models[1].latency[4])`}},
		{"block_us length", f, pr(func(p *Profile) { y(p).Latency[0].BlockUs = []float64{1, 2} }), []string{`profile.json: models[1].latency[0].block_us: 2: length must be len(blocks) = 3`}},
		{"block_us negative", f, pr(func(p *Profile) { y(p).Latency[0].BlockUs[2] = -1 }), []string{`profile.json: models[1].latency[0].block_us[2]: -1: must be >= 0`}},
		{"block_us NaN", f, pr(func(p *Profile) { y(p).Latency[0].BlockUs[2] = nan }), []string{`profile.json: models[1].latency[0].block_us[2]: NaN: must be >= 0`}},
		{"p90 length", f, pr(func(p *Profile) { y(p).Latency[0].P90Us = []float64{1} }), []string{`profile.json: models[1].latency[0].p90_us: 1: length must be len(blocks) = 3`}},
		{"cv NaN", f, pr(func(p *Profile) { y(p).Latency[0].CV[1] = nan }), []string{`profile.json: models[1].latency[0].cv[1]: NaN: must be >= 0`}},
		{"total_us", f, pr(func(p *Profile) { y(p).Latency[0].TotalUs = -1 }), []string{`profile.json: models[1].latency[0].total_us: -1: must be >= 0`}},
		{"llm model", f, pr(func(p *Profile) { p.LLMs[2].Model = "" }), []string{`profile.json: llms[2].model: "": must not be empty`}},
		{"llm gpu", f, pr(func(p *Profile) { p.LLMs[2].GPU = "" }), []string{`profile.json: llms[2].gpu: "": must not be empty`}},
		{"llm gpu_count", f, pr(func(p *Profile) { p.LLMs[2].GPUCount = 0 }), []string{`profile.json: llms[2].gpu_count: 0: must be >= 1`}},
		{"llm duplicate", f, pr(func(p *Profile) { p.LLMs[1].GPU = "L4" }), []string{`profile.json: llms[1]: (llama-3.2-1b, L4 x1): duplicate (model, gpu, gpu_count) entry (first at llms[0])`}},
		{"llm backend", f, pr(func(p *Profile) { p.LLMs[2].Backend = "vllm" }), []string{`profile.json: llms[2].backend: "vllm": must be one of roofline, import`}},
		{"llm params", f, pr(func(p *Profile) { p.LLMs[2].ParamsB = 0 }), []string{`profile.json: llms[2].params_billion: 0: must be > 0`}},
		{"llm weights", f, pr(func(p *Profile) { p.LLMs[2].WeightBytes = 0 }), []string{`profile.json: llms[2].weight_bytes: 0: must be > 0`}},
		{"llm prefill base", f, pr(func(p *Profile) { p.LLMs[2].PrefillBaseUs = -1 }), []string{`profile.json: llms[2].prefill_base_us: -1: must be >= 0`}},
		{"llm prefill per token", f, pr(func(p *Profile) { p.LLMs[2].PrefillUsPerToken = 0 }), []string{`profile.json: llms[2].prefill_us_per_token: 0: must be > 0`}},
		{"llm decode", f, pr(func(p *Profile) { p.LLMs[2].DecodeUsPerToken = nan }), []string{`profile.json: llms[2].decode_us_per_token: NaN: must be > 0`}},
		{"llm throughput", f, pr(func(p *Profile) { p.LLMs[2].ThroughputTokensPerS = -1 }), []string{`profile.json: llms[2].throughput_tokens_per_s: -1: must be > 0`}},
		{"llm kv bytes", f, pr(func(p *Profile) { p.LLMs[2].KVBytesPerToken = 0 }), []string{`profile.json: llms[2].kv_bytes_per_token: 0: must be > 0`}},
		{"llm kv capacity", f, pr(func(p *Profile) { p.LLMs[2].KVCapacityTokens = -1 }), []string{`profile.json: llms[2].kv_capacity_tokens: -1: must be > 0`}},
		{"llm kv groups none", f, pr(func(p *Profile) { p.LLMs[2].KVGroups = &LLMKVGroups{LayersPerGroup: 1} }), []string{`profile.json: llms[2].kv_groups.sliding: 0: full + sliding + chunked must be >= 1: a KV cache has at least one group`}},
		{"llm kv groups chunk", f, pr(func(p *Profile) { p.LLMs[2].KVGroups = &LLMKVGroups{Full: 1, Chunked: 3, LayersPerGroup: 12} }), []string{`profile.json: llms[2].kv_groups.attention_chunk: 0: must be >= 1`}},
		{"llm kv groups chunked", f, pr(func(p *Profile) {
			p.LLMs[2].KVGroups = &LLMKVGroups{Full: 1, Chunked: -2, AttentionChunk: 8192, LayersPerGroup: 12}
		}), []string{`profile.json: llms[2].kv_groups.chunked: -2: must be >= 0`}},
		{"llm kv groups too many", f, pr(func(p *Profile) {
			p.LLMs[2].KVGroups = &LLMKVGroups{Full: 1, Chunked: 5000, AttentionChunk: 8192, LayersPerGroup: 12}
		}), []string{`profile.json: llms[2].kv_groups.chunked: 5000: must be <= 1024: a group holds at least one layer`}},
		{"llm kv groups window", f, pr(func(p *Profile) { p.LLMs[2].KVGroups = &LLMKVGroups{Full: 1, Sliding: 1, LayersPerGroup: 4} }), []string{`profile.json: llms[2].kv_groups.sliding_window: 0: must be >= 1`}},
		{"llm kv groups layers", f, pr(func(p *Profile) { p.LLMs[2].KVGroups = &LLMKVGroups{Full: -1, Sliding: 1, SlidingWindow: 128} }), []string{`profile.json: llms[2].kv_groups.full: -1: must be >= 0`, `profile.json: llms[2].kv_groups.layers_per_group: 0: must be >= 1`}},
		{"llm kv groups pool", f, pr(func(p *Profile) {
			p.LLMs[2].KVCapacityTokens = 1 << 30
			p.LLMs[2].KVGroups = &LLMKVGroups{Full: 1, Sliding: 6, SlidingWindow: 1024, LayersPerGroup: 10}
		}), []string{`profile.json: llms[2].kv_capacity_tokens: 1073741824: must be <= 306783378 over 7 KV groups: the engine numbers the pool's blocks in 32 bits`}},
		{"llm avg batch", f, pr(func(p *Profile) { p.LLMs[2].AvgBatch = 0 }), []string{`profile.json: llms[2].avg_batch: 0: must be > 0`}},
		{"llm epsilon", f, pr(func(p *Profile) { p.LLMs[2].Epsilon = -1 }), []string{`profile.json: llms[2].epsilon: -1: must be > 0 (or omitted)`}},
		{"llm load cold", f, pr(func(p *Profile) { p.LLMs[2].LoadColdUs = -1 }), []string{`profile.json: llms[2].load_cold_us: -1: must be >= 0`}},
		{"llm load warm", f, pr(func(p *Profile) { p.LLMs[2].LoadWarmUs = inf }), []string{`profile.json: llms[2].load_warm_us: +Inf: must be >= 0`}},
		{"llm host link", f, pr(func(p *Profile) { p.LLMs[2].HostLinkGBps = -1 }), []string{`profile.json: llms[2].host_link_gbps: -1: must be > 0 (or omitted)`}},
		// Iteration curves: negative or non-finite times are refused; falling ones are not.
		{"llm iteration negative", f, pr(func(p *Profile) { p.LLMs[2].Iteration = iter(-5) }), []string{`profile.json: llms[2].iteration.prefill[1].us: -5: must be > 0`}},
		{"llm iteration NaN", f, pr(func(p *Profile) { p.LLMs[2].Iteration = iter(nan) }), []string{`profile.json: llms[2].iteration.prefill[1].us: NaN: must be > 0`}},
		{"llm iteration falls", f, pr(func(p *Profile) { p.LLMs[2].Iteration = iter(500) }), nil},
		{"llm batched tokens below block", f, pr(func(p *Profile) { p.LLMs[2].Engine = &LLMEngine{MaxNumBatchedTokens: 8} }), []string{`profile.json: llms[2].engine.max_num_batched_tokens: 8: must be >= block_size (16): a step could not compute one block`}},
		{"llm max_model_len over KV", f, pr(func(p *Profile) { p.LLMs[2].Engine = &LLMEngine{MaxModelLen: int(p.LLMs[2].KVCapacityTokens) + 1} }), []string{`profile.json: llms[2].engine.max_model_len: 42271: must be <= kv_capacity_tokens (42270): the KV cache cannot hold one request of this length`}},
		{"llm max_model_len chunked off", f, pr(func(p *Profile) {
			off := false
			p.LLMs[2].Engine = &LLMEngine{MaxModelLen: 4096, MaxNumBatchedTokens: 2048, EnableChunkedPrefill: &off}
		}), []string{`profile.json: llms[2].engine.max_model_len: 4096: must be <= max_num_batched_tokens (2048) with enable_chunked_prefill false`}},
		{"llm gpu_memory_utilization", f, pr(func(p *Profile) { p.LLMs[2].Engine = &LLMEngine{GPUMemoryUtilization: 1.5} }), []string{`profile.json: llms[2].engine.gpu_memory_utilization: 1.5: must be in (0, 1]`}},
		{"llm swap_space", f, pr(func(p *Profile) { p.LLMs[2].Engine = &LLMEngine{SwapSpace: inf} }), []string{`profile.json: llms[2].engine.swap_space: +Inf: must be in [0, 1048576] GiB`}},
		{"llm output delay", f, pr(func(p *Profile) { d := -1; p.LLMs[2].Engine = &LLMEngine{OutputDelaySteps: &d} }), []string{`profile.json: llms[2].engine.output_delay_steps: -1: must be in [0, 16]`}},
		{"llm scheduling_policy", f, pr(func(p *Profile) { p.LLMs[2].Engine = &LLMEngine{SchedulingPolicy: "edf"} }), []string{`profile.json: llms[2].engine.scheduling_policy: "edf": must be one of fcfs, priority`}},
		{"llm max_num_seqs", f, pr(func(p *Profile) { p.LLMs[2].Engine = &LLMEngine{MaxNumSeqs: -1} }), []string{`profile.json: llms[2].engine.max_num_seqs: -1: must be in [0, 65536]`}},
		{"llm block_size not a power of two", f, pr(func(p *Profile) { p.LLMs[2].Engine = &LLMEngine{BlockSize: 24} }), []string{`profile.json: llms[2].engine.block_size: 24: must be a power of two (vLLM's block sizes)`}},
		{"llm block_size negative", f, pr(func(p *Profile) { p.LLMs[2].Engine = &LLMEngine{BlockSize: -16} }), []string{`profile.json: llms[2].engine.block_size: -16: must be in [0, 4096]`}},
		{"llm kv_allocation", f, pr(func(p *Profile) { p.LLMs[2].Engine = &LLMEngine{KVAllocation: "lazy"} }), []string{`profile.json: llms[2].engine.kv_allocation: "lazy": must be one of admission, chunk, chunk_full_prompt_check`}},
		{"llm watermark", f, pr(func(p *Profile) { w := 1.5; p.LLMs[2].Engine = &LLMEngine{Watermark: &w} }), []string{`profile.json: llms[2].engine.watermark: 1.5: must be in [0, 1): a fraction of the KV blocks`}},
		{"llm watermark NaN", f, pr(func(p *Profile) { p.LLMs[2].Engine = &LLMEngine{Watermark: &nan} }), []string{`profile.json: llms[2].engine.watermark: NaN: must be in [0, 1): a fraction of the KV blocks`}},
		{"llm release", f, pr(func(p *Profile) { p.LLMs[2].Engine = &LLMEngine{Release: "later"} }), []string{`profile.json: llms[2].engine.release: "later": must be one of same_step, next_step`}},
		{"llm preemption_mode", f, pr(func(p *Profile) { p.LLMs[2].Engine = &LLMEngine{PreemptionMode: "drop"} }), []string{`profile.json: llms[2].engine.preemption_mode: "drop": must be one of recompute, swap`}},
		{"llm speculative acceptance 1", f, pr(func(p *Profile) {
			p.LLMs[2].Engine = &LLMEngine{Speculative: &LLMSpeculative{DraftTokens: 4, AcceptanceRate: 1}}
		}), []string{`profile.json: llms[2].engine.speculative.acceptance_rate: 1: must be in [0, 1)`}},
		{"llm speculative draft tokens", f, pr(func(p *Profile) {
			p.LLMs[2].Engine = &LLMEngine{Speculative: &LLMSpeculative{DraftTokens: 0, AcceptanceRate: 0.5}}
		}), []string{`profile.json: llms[2].engine.speculative.draft_tokens: 0: must be in [1, 64]`}},
		{"llm speculative two draft costs", f, pr(func(p *Profile) {
			p.LLMs[2].Engine = &LLMEngine{Speculative: &LLMSpeculative{DraftTokens: 2, AcceptanceRate: 0.5, DraftStepUs: 100, DraftCostRatio: 0.1}}
		}), []string{`profile.json: llms[2].engine.speculative.draft_cost_ratio: 0.1: must be omitted with draft_step_us (one draft cost)`}},
		{"llm speculative negative draft cost", f, pr(func(p *Profile) {
			p.LLMs[2].Engine = &LLMEngine{Speculative: &LLMSpeculative{DraftTokens: 2, AcceptanceRate: 0.5, DraftStepUs: -1}}
		}), []string{`profile.json: llms[2].engine.speculative.draft_step_us: -1: must be >= 0`}},
		{"llm preemption_mode swap without swap space", f, pr(func(p *Profile) { p.LLMs[2].Engine = &LLMEngine{PreemptionMode: "swap"} }), []string{`profile.json: llms[2].engine.preemption_mode: "swap": needs swap_space > 0: swapped KV needs CPU memory`}},
		{"llm engine settings good", f, pr(func(p *Profile) {
			w := 0.02
			p.LLMs[2].Engine = &LLMEngine{BlockSize: 32, KVAllocation: "admission", Watermark: &w, Release: "next_step", PreemptionMode: "swap", SwapSpace: 4, EnablePrefixCaching: new(true)}
		}), nil},
	})
}

// iter is an iteration model whose prefill curve's second point takes us µs.
func iter(us float64) *LLMIteration {
	return &LLMIteration{Prefill: []PWLPoint{{Tokens: 1, Us: 1000}, {Tokens: 512, Us: us}}, Decode: []PWLPoint{{Tokens: 1, Us: 5000}}}
}

// TestPWLWarnings: a point falling by more than 10% is named; one within it is not.
func TestPWLWarnings(t *testing.T) {
	p := &Profile{LLMs: []LLMProfile{{Iteration: &LLMIteration{
		Prefill: []PWLPoint{{Tokens: 1, Us: 1000}, {Tokens: 64, Us: 950}, {Tokens: 128, Us: 800}},
		Decode:  []PWLPoint{{Tokens: 1, Us: 5000}, {Tokens: 8, Us: 4000}},
	}}}}
	got := PWLWarnings(p)
	want := []string{
		"llms[0].iteration.prefill[2].us: 800 µs at 128 tokens is 16% below the previous point (950 µs at 64 tokens); used as measured",
		"llms[0].iteration.decode[1].us: 4000 µs at 8 tokens is 20% below the previous point (5000 µs at 1 tokens); used as measured",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

func TestValidateWorkload(t *testing.T) {
	const f = "workload.yaml"
	runBad(t, []badCase{
		{"kind", f, wl(func(w *Workload) { w.Kind = "Trace" }), []string{`workload.yaml: kind: "Trace": must be Workload`}},
		{"empty", f, wl(func(w *Workload) {
			delete(w.Sections, "models")
			delete(w.Sections, "pipelines")
			delete(w.Sections, "cascades")
			delete(w.Sections, "llm_classes")
			delete(w.Sections, "workflows")
		}), []string{`workload.yaml: must describe at least one of models, pipelines, cascades, llm_classes or workflows`}},
	})
}

func TestValidateTrace(t *testing.T) {
	const f, c = "trace-requests.json", "trace-counts.json"
	runBad(t, []badCase{
		{"kind", f, tr(func(t *Trace) { t.Kind = "" }), []string{`trace-requests.json: kind: "": must be Trace`}},
		{"both", f, tr(func(t *Trace) { t.Counts = &RateSeries{Interval: ms(1000), Counts: []int64{1}} }), []string{`trace-requests.json: counts: set requests or counts, not both`}},
		{"neither", f, tr(func(t *Trace) { t.Requests = nil }), []string{`trace-requests.json: requests: must set requests (at least one) or counts`}},
		{"negative time", f, tr(func(t *Trace) { t.Requests[0].TimeUs = -1 }), []string{`trace-requests.json: requests[0].t_us: -1: must be >= 0`}},
		{"decreasing", f, tr(func(t *Trace) { t.Requests[5].TimeUs = 100 }), []string{`trace-requests.json: requests[5].t_us: 100: must be >= requests[4].t_us (4100): timestamps must be non-decreasing`}},
		{"input tokens", f, tr(func(t *Trace) { t.Requests[3].InputTokens = -1 }), []string{`trace-requests.json: requests[3].input_tokens: -1: must be >= 0`}},
		{"output tokens", f, tr(func(t *Trace) { t.Requests[3].OutputTokens = -1 }), []string{`trace-requests.json: requests[3].output_tokens: -1: must be >= 0`}},
		{"interval", c, tr(func(t *Trace) { t.Counts.Interval = 0 }), []string{`trace-counts.json: counts.interval: 0s: must be > 0`}},
		{"no counts", c, tr(func(t *Trace) { t.Counts.Counts = nil }), []string{`trace-counts.json: counts.counts: must have at least one interval`}},
		{"negative count", c, tr(func(t *Trace) { t.Counts.Counts[3] = -7 }), []string{`trace-counts.json: counts.counts[3]: -7: must be >= 0`}},
	})
}
