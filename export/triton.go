package export

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// TritonConfig is the part of a Triton model configuration a plan sets (Triton's
// model_config.proto).
// PBTxt renders it deterministically in protobuf text format.
type TritonConfig struct {
	Name     string
	Platform string // "onnxruntime_onnx" or "ensemble"
	// MaxBatchSize is the largest batch (the plan's batch).
	MaxBatchSize int
	Inputs       []TritonTensor
	Outputs      []TritonTensor
	// Groups are the instance groups (KIND_GPU, count per listed GPU): Triton starts count
	// instances on each GPU of gpus, and on every GPU it sees when gpus is empty
	// (ecosystem.md §7), so exporters always list them.
	Groups []TritonGroup
	// Batching is dynamic_batching (nil = none).
	Batching *TritonBatching
	// Steps is ensemble_scheduling.step (ensembles only).
	Steps []TritonStep
	// Parameters are free-form string parameters: plan provenance of the model.
	Parameters map[string]string
}

// TritonGroup is one instance_group: Count instances on each of GPUs.
type TritonGroup struct {
	Count int
	GPUs  []int
}

// PoolGroups lays a pool of count slices of 1/vgpu GPU onto whole GPUs first..: vgpu
// instances on each full GPU and the remainder on the last, so that Triton starts exactly
// count instances, at most vgpu per GPU. It returns the groups and the next free GPU index.
func PoolGroups(count, vgpu, first int) ([]TritonGroup, int) {
	vgpu = max(vgpu, 1)
	full, rest := count/vgpu, count%vgpu
	var gs []TritonGroup
	next := first
	if full > 0 {
		g := TritonGroup{Count: vgpu}
		for i := 0; i < full; i++ {
			g.GPUs = append(g.GPUs, next)
			next++
		}
		gs = append(gs, g)
	}
	if rest > 0 {
		gs = append(gs, TritonGroup{Count: rest, GPUs: []int{next}})
		next++
	}
	return gs, next
}

// TritonTensor is one input or output.
type TritonTensor struct {
	Name     string
	DataType string // TYPE_FP32, ...
	Dims     []int64
}

// TritonBatching is dynamic_batching with a rejecting default queue policy.
type TritonBatching struct {
	Preferred       []int
	MaxQueueDelayUs int64
	TimeoutUs       int64
}

// TritonStep is one ensemble step; maps go from the step model's tensor to the ensemble's.
type TritonStep struct {
	Model  string
	Input  map[string]string
	Output map[string]string
}

// PBTxt renders c as config.pbtxt.
func (c *TritonConfig) PBTxt() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\n", strconv.Quote(c.Name))
	fmt.Fprintf(&b, "platform: %s\n", strconv.Quote(c.Platform))
	fmt.Fprintf(&b, "max_batch_size: %d\n", c.MaxBatchSize)
	tensors := func(kind string, ts []TritonTensor) {
		for _, t := range ts {
			dims := make([]string, len(t.Dims))
			for i, d := range t.Dims {
				dims[i] = strconv.FormatInt(d, 10)
			}
			fmt.Fprintf(&b, "%s {\n  name: %s\n  data_type: %s\n  dims: [ %s ]\n}\n", kind, strconv.Quote(t.Name), t.DataType, strings.Join(dims, ", "))
		}
	}
	tensors("input", c.Inputs)
	tensors("output", c.Outputs)
	for _, g := range c.Groups {
		gpus := make([]string, len(g.GPUs))
		for i, x := range g.GPUs {
			gpus[i] = strconv.Itoa(x)
		}
		fmt.Fprintf(&b, "instance_group {\n  kind: KIND_GPU\n  count: %d\n  gpus: [ %s ]\n}\n", g.Count, strings.Join(gpus, ", "))
	}
	if q := c.Batching; q != nil {
		b.WriteString("dynamic_batching {\n")
		for _, p := range q.Preferred {
			fmt.Fprintf(&b, "  preferred_batch_size: %d\n", p)
		}
		fmt.Fprintf(&b, "  max_queue_delay_microseconds: %d\n", q.MaxQueueDelayUs)
		fmt.Fprintf(&b, "  default_queue_policy {\n    timeout_action: REJECT\n    default_timeout_microseconds: %d\n  }\n", q.TimeoutUs)
		b.WriteString("}\n")
	}
	if len(c.Steps) > 0 {
		b.WriteString("ensemble_scheduling {\n")
		for _, s := range c.Steps {
			fmt.Fprintf(&b, "  step {\n    model_name: %s\n    model_version: -1\n", strconv.Quote(s.Model))
			pbMap(&b, "input_map", s.Input)
			pbMap(&b, "output_map", s.Output)
			b.WriteString("  }\n")
		}
		b.WriteString("}\n")
	}
	keys := slices.Sorted(maps.Keys(c.Parameters))
	for _, k := range keys {
		fmt.Fprintf(&b, "parameters {\n  key: %s\n  value { string_value: %s }\n}\n", strconv.Quote(k), strconv.Quote(c.Parameters[k]))
	}
	return []byte(b.String())
}

func pbMap(b *strings.Builder, field string, m map[string]string) {
	keys := slices.Sorted(maps.Keys(m))
	for _, k := range keys {
		fmt.Fprintf(b, "    %s { key: %s value: %s }\n", field, strconv.Quote(k), strconv.Quote(m[k]))
	}
}

// Placement parameter keys every exporter writes (Triton parameters, KServe labels and
// annotations, Ray user_config): ReadBack reads them.
const (
	ParamKey        = "plan.key"
	ParamGPU        = "plan.gpu"
	ParamVGPU       = "plan.vgpu"
	ParamCount      = "plan.count"
	ParamBatch      = "plan.batch"
	ParamFirstBlock = "plan.first_block"
	ParamEndBlock   = "plan.end_block"
	// ParamServers is how many identical Triton servers (pods) run a model: its instance
	// groups are one server's, with GPU ids within the server.
	ParamServers = "plan.servers"
	// ParamPod names the server a model shares with others (PPipe's stage rounding puts a
	// stage's pools on the same GPUs); absent: the model's servers are its own.
	ParamPod = "plan.pod"
)

// Params returns the placement as string parameters.
func (p Placement) Params() map[string]string {
	return map[string]string{
		ParamKey: p.Key, ParamGPU: p.GPU, ParamVGPU: strconv.Itoa(p.VGPU), ParamCount: strconv.Itoa(p.Count),
		ParamBatch: strconv.Itoa(p.Batch), ParamFirstBlock: strconv.Itoa(p.FirstBlock), ParamEndBlock: strconv.Itoa(p.EndBlock),
	}
}

// placementFrom parses Params' output back.
func placementFrom(m map[string]string) (Placement, error) {
	p := Placement{Key: m[ParamKey], GPU: m[ParamGPU]}
	if p.Key == "" {
		return p, fmt.Errorf("no %s", ParamKey)
	}
	for _, f := range []struct {
		k string
		v *int
	}{{ParamVGPU, &p.VGPU}, {ParamCount, &p.Count}, {ParamBatch, &p.Batch}, {ParamFirstBlock, &p.FirstBlock}, {ParamEndBlock, &p.EndBlock}} {
		n, err := strconv.Atoi(m[f.k])
		if err != nil {
			return p, fmt.Errorf("%s: %s: %q: not an integer", p.Key, f.k, m[f.k])
		}
		*f.v = n
	}
	return p, nil
}
