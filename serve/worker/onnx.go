//go:build cgo

package worker

import (
	"fmt"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/profiler/measure"
	"github.com/plan-dev/plan/profiler/onnx"
	"github.com/plan-dev/plan/serve/kserve"
)

// ONNX is the executor that runs each stage's partition of the model with ONNX Runtime: the
// partition's blocks become one subgraph (profiler/onnx.Subgraph) and one session; a batch
// is the concatenation of its requests along the batch dimension; the tensors crossing a cut
// leave the stage as fp16 (per request) and are widened again by the next stage.
type ONNX struct {
	clk    Clock
	dep    *dataplane.Deployment
	stages []*onnxStage // by StageID
	in     kserve.TensorSpec
	out    kserve.TensorSpec
	outIdx map[*onnxStage]int
	owned  []*measure.Session
}

type onnxStage struct {
	name    string
	sess    *measure.Session
	inputs  []string
	outputs []string
	first   bool // takes the client's tensor
	last    bool // produces the model's output
}

// ONNXFactory returns the ExecutorFactory of onnx workers. The plan's system says what its
// stages run (ONNXOptions.Cuts): partitions of one model cut into blocks (ONNX: a PPipe
// plan), or a whole model per stage (ONNXModels: a cascade, a workflow).
func ONNXFactory(o ONNXOptions) ExecutorFactory {
	return func(clk Clock, dep *dataplane.Deployment, p *formats.Plan) (Executor, error) {
		var c cuts
		if o.Cuts != nil {
			c.model, c.blocks, c.err = o.Cuts(p, dep)
		}
		if c.model == "" && c.err == nil {
			return NewONNXModels(clk, dep, o)
		}
		return newONNX(clk, dep, p, o, c)
	}
}

// cuts is what the plan's system answered: the model cut, each stage's blocks, or why not.
type cuts struct {
	model  string
	blocks [][2]int
	err    error
}

// NewONNX builds one session per distinct partition of the plan (the preload step); o.Cuts
// says which blocks of which model each stage runs.
func NewONNX(clk Clock, dep *dataplane.Deployment, p *formats.Plan, o ONNXOptions) (*ONNX, error) {
	c := cuts{err: fmt.Errorf("onnx workers: the plan's system cuts no model into stages")}
	if o.Cuts != nil {
		c.model, c.blocks, c.err = o.Cuts(p, dep)
	}
	return newONNX(clk, dep, p, o, c)
}

func newONNX(clk Clock, dep *dataplane.Deployment, p *formats.Plan, o ONNXOptions, c cuts) (*ONNX, error) {
	if err := measure.LibraryAvailable(); err != nil {
		return nil, err
	}
	data, err := onnx.ReadFile(o.Model) // the guarded reader: regular files only, bounded
	if err != nil {
		return nil, fmt.Errorf("--model: %w", err)
	}
	m, err := onnx.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("--model %s: %w", o.Model, err)
	}
	if _, err := m.Graph(nil); err != nil {
		return nil, fmt.Errorf("--model %s: %w", o.Model, err)
	}
	if len(m.Inputs) != 1 || len(m.Outputs) != 1 {
		return nil, fmt.Errorf("--model %s: %d inputs and %d outputs: onnx workers serve one-input, one-output models", o.Model, len(m.Inputs), len(m.Outputs))
	}
	if m.Inputs[0].Elem != onnx.Float || m.Outputs[0].Elem != onnx.Float {
		return nil, fmt.Errorf("--model %s: onnx workers serve float32 models (input %s, output %s)", o.Model, m.Inputs[0].Elem, m.Outputs[0].Elem)
	}
	if c.err != nil {
		return nil, c.err
	}
	if c.model == "" || len(c.blocks) != len(dep.Stages) {
		return nil, fmt.Errorf("onnx workers serve plans of exactly one model (the one in --model)")
	}
	model := c.model
	prof := p.EmbeddedModel(model)
	if prof == nil || len(prof.Blocks) == 0 {
		return nil, fmt.Errorf("the plan embeds no block profile of model %q: onnx workers need it to cut --model", model)
	}
	if end := prof.Blocks[len(prof.Blocks)-1].EndLayer; end != len(m.Nodes) {
		return nil, fmt.Errorf("the plan's profile of %q has %d layers but --model %s has %d nodes: profile this model file (plan profile %s)", model, end, o.Model, len(m.Nodes), o.Model)
	}
	x := &ONNX{clk: clk, dep: dep, stages: make([]*onnxStage, len(dep.Stages)), outIdx: map[*onnxStage]int{},
		in:  kserve.TensorSpec{Name: m.Inputs[0].Name, Datatype: "FP32", Shape: specShape(m.Inputs[0].Dims)},
		out: kserve.TensorSpec{Name: m.Outputs[0].Name, Datatype: "FP32", Shape: specShape(m.Outputs[0].Dims)}}
	byRange := map[[2]int]*onnxStage{}
	for si := range dep.Stages {
		st := &dep.Stages[si]
		first, end := c.blocks[si][0], c.blocks[si][1]
		if first < 0 || end > len(prof.Blocks) || first >= end {
			x.Close()
			return nil, fmt.Errorf("stage %s: blocks [%d,%d): the profile of %q has %d blocks", st.Name, first, end, model, len(prof.Blocks))
		}
		a, b := prof.Blocks[first].FirstLayer, prof.Blocks[end-1].EndLayer
		if ost := byRange[[2]int{a, b}]; ost != nil {
			x.stages[si] = ost
			continue
		}
		sub, err := onnx.Subgraph(m, a, b)
		if err != nil {
			x.Close()
			return nil, fmt.Errorf("stage %s (nodes %d..%d): %w", st.Name, a, b, err)
		}
		ins, outs, err := onnx.BlockIO(m, a, b)
		if err != nil {
			x.Close()
			return nil, err
		}
		sess, err := measure.NewSession(st.Name, sub, ins, outs, o.Device, o.Threads)
		if err != nil {
			x.Close()
			return nil, err
		}
		x.owned = append(x.owned, sess)
		ost := &onnxStage{name: st.Name, sess: sess, inputs: ins, outputs: outs, first: a == 0, last: b == len(m.Nodes)}
		if ost.last {
			x.outIdx[ost] = indexOf(outs, x.out.Name)
			if x.outIdx[ost] < 0 {
				x.Close()
				return nil, fmt.Errorf("stage %s: the last partition does not produce %q", st.Name, x.out.Name)
			}
		}
		byRange[[2]int{a, b}] = ost
		x.stages[si] = ost
	}
	return x, nil
}

func specShape(d []onnx.Dim) []int64 {
	out := make([]int64, len(d))
	for i, x := range d {
		out[i] = -1
		if i > 0 && x.Known() {
			out[i] = x.Value
		}
	}
	if len(out) == 0 {
		return []int64{-1}
	}
	return out
}

func indexOf(xs []string, s string) int {
	for i, x := range xs {
		if x == s {
			return i
		}
	}
	return -1
}

// Kind implements Executor.
func (x *ONNX) Kind() string { return "onnx" }

// Spec implements SpecProvider.
func (x *ONNX) Spec(dataplane.AppID) (in, out kserve.TensorSpec) { return x.in, x.out }

// Run implements Executor: the session runs on its own goroutine.
func (x *ONNX) Run(job *Job, done func(*Job)) { runAsync(x.clk, job, done, x.run) }

func (x *ONNX) run(job *Job) {
	st := x.stages[job.Stage]
	fail := func(err error) { job.failLive(err, st.name) }
	live := job.live()
	n := len(live)
	if n == 0 {
		return
	}
	inputs := make([]measure.FloatTensor, len(st.inputs))
	for k, name := range st.inputs {
		var per []int64
		var data []float32
		for j, i := range live {
			p := job.Payload[i]
			var shape []int64
			var vals []float32
			if st.first && name == x.in.Name {
				v, err := p.Tensor.Float32s()
				if err != nil {
					fail(fmt.Errorf("input %q: %v", name, err))
					return
				}
				shape, vals = p.Tensor.Shape[1:], v
			} else {
				f := findFeature(p.Features, name)
				if f == nil {
					fail(fmt.Errorf("feature map %q did not reach this stage", name))
					return
				}
				shape = f.Shape
				vals = make([]float32, len(f.F16))
				for e, h := range f.F16 {
					vals[e] = kserve.F16ToF32(h)
				}
			}
			if j == 0 {
				per = shape
				data = make([]float32, 0, n*len(vals))
			} else if !sameDims(per, shape) {
				fail(fmt.Errorf("input %q: samples of one batch differ in shape (%v, %v)", name, per, shape))
				return
			}
			data = append(data, vals...)
		}
		inputs[k] = measure.FloatTensor{Shape: append([]int64{int64(n)}, per...), Data: data}
	}
	outs, err := st.sess.Run(inputs)
	if err != nil {
		fail(err)
		return
	}
	for j, i := range live {
		np := &Payload{}
		for k, name := range st.outputs {
			o := outs[k]
			if len(o.Shape) == 0 || o.Shape[0] != int64(n) || len(o.Data)%n != 0 {
				fail(fmt.Errorf("output %q: shape %v for a batch of %d", name, o.Shape, n))
				return
			}
			per := len(o.Data) / n
			vals := o.Data[j*per : (j+1)*per]
			if st.last && k == x.outIdx[st] {
				np.Tensor = kserve.Float32Tensor(name, append([]int64{1}, o.Shape[1:]...), vals)
				continue
			}
			f := Feature{Name: name, Shape: append([]int64(nil), o.Shape[1:]...), F16: make([]uint16, len(vals))}
			for e, v := range vals {
				f.F16[e] = kserve.F32ToF16(v)
			}
			np.Features = append(np.Features, f)
		}
		job.Payload[i] = np
	}
}

func findFeature(fs []Feature, name string) *Feature {
	for i := range fs {
		if fs[i].Name == name {
			return &fs[i]
		}
	}
	return nil
}

// Close implements Executor.
func (x *ONNX) Close() error {
	err := closeSessions(x.owned)
	x.owned = nil
	return err
}

// closeSessions closes every session and returns the first error.
func closeSessions(ss []*measure.Session) error {
	var first error
	for _, s := range ss {
		if err := s.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
