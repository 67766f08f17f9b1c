//go:build cgo

package worker

import (
	"fmt"
	"math"
	"slices"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/profiler/measure"
	"github.com/plan-dev/plan/profiler/onnx"
	"github.com/plan-dev/plan/serve/kserve"
)

// ONNXModels is the onnx executor of deployments whose stages each run one whole model
// (Stage.Model: a cascade's stages, CascadeServe §5): every distinct model gets one ONNX
// Runtime session, a batch runs on the client's input of each of its requests, and the executor
// reports each request's real output — certainty = max softmax probability, label = argmax (the
// softmax measure of CascadeServe §4.2; its Appendix B uses the top-two gap instead) — in
// Job.Results, so the policy forwards a request by what the model said of it rather than by
// replayed validation records. The answer's tensor is the output of the stage that answered;
// the client's input travels with it (Payload.Input) for the stages after the first.
type ONNXModels struct {
	clk    Clock
	stages []*wholeModel // by StageID
	names  []string      // stage names, by StageID
	in     kserve.TensorSpec
	out    kserve.TensorSpec
	owned  []*measure.Session
}

type wholeModel struct {
	model string
	sess  *measure.Session
	in    string
	out   string
}

// NewONNXModels opens one session per distinct Stage.Model of dep (the preload step).
func NewONNXModels(clk Clock, dep *dataplane.Deployment, o ONNXOptions) (*ONNXModels, error) {
	if err := measure.LibraryAvailable(); err != nil {
		return nil, err
	}
	var models []string
	for i := range dep.Stages {
		m := dep.Stages[i].Model
		if m == "" && dep.Route != nil {
			// A stage that runs no model in a deployment that routes by model outputs (a
			// workflow's ingress at the API server): it passes the request on, and the system's
			// Route decides from class -1.
			continue
		}
		if m == "" {
			return nil, fmt.Errorf("stage %s runs no whole model: onnx workers serve PPipe plans (partitions of --model) or plans whose stages each run one model", dep.Stages[i].Name)
		}
		if !slices.Contains(models, m) {
			models = append(models, m)
		}
	}
	x := &ONNXModels{clk: clk, stages: make([]*wholeModel, len(dep.Stages)), names: make([]string, len(dep.Stages))}
	byModel := map[string]*wholeModel{}
	for _, name := range models {
		data, path, err := readModel(o.Model, models, name)
		if err != nil {
			x.Close()
			return nil, err
		}
		m, err := onnx.Parse(data)
		if err != nil {
			x.Close()
			return nil, fmt.Errorf("model %s: %s: %w", name, path, err)
		}
		if len(m.Inputs) != 1 || len(m.Outputs) != 1 {
			x.Close()
			return nil, fmt.Errorf("model %s: %s has %d inputs and %d outputs: onnx workers serve one-input, one-output models", name, path, len(m.Inputs), len(m.Outputs))
		}
		if m.Inputs[0].Elem != onnx.Float || m.Outputs[0].Elem != onnx.Float {
			x.Close()
			return nil, fmt.Errorf("model %s: %s: onnx workers serve float32 models (input %s, output %s)", name, path, m.Inputs[0].Elem, m.Outputs[0].Elem)
		}
		in := kserve.TensorSpec{Name: m.Inputs[0].Name, Datatype: "FP32", Shape: specShape(m.Inputs[0].Dims)}
		out := kserve.TensorSpec{Name: m.Outputs[0].Name, Datatype: "FP32", Shape: specShape(m.Outputs[0].Dims)}
		if len(byModel) == 0 {
			x.in, x.out = in, out
		} else if !slices.Equal(in.Shape, x.in.Shape) || !slices.Equal(out.Shape, x.out.Shape) {
			// A request may be answered by any stage and is forwarded with its input: every
			// model must take the same input and answer in the same classes.
			x.Close()
			return nil, fmt.Errorf("model %s: %s takes %v and gives %v, but %s takes %v and gives %v: the models of one plan must share input and output shapes",
				name, path, in.Shape, out.Shape, models[0], x.in.Shape, x.out.Shape)
		}
		sess, err := measure.NewSession(name, data, []string{in.Name}, []string{out.Name}, o.Device, o.Threads)
		if err != nil {
			x.Close()
			return nil, fmt.Errorf("model %s: %w", name, err)
		}
		x.owned = append(x.owned, sess)
		byModel[name] = &wholeModel{model: name, sess: sess, in: in.Name, out: out.Name}
	}
	for i := range dep.Stages {
		x.stages[i] = byModel[dep.Stages[i].Model]
		x.names[i] = dep.Stages[i].Name
	}
	return x, nil
}

// Kind implements Executor.
func (x *ONNXModels) Kind() string { return "onnx" }

// Spec implements SpecProvider: every model's input and output (they are checked equal).
func (x *ONNXModels) Spec(dataplane.AppID) (in, out kserve.TensorSpec) { return x.in, x.out }

// Run implements Executor: the session runs on its own goroutine.
func (x *ONNXModels) Run(job *Job, done func(*Job)) { runAsync(x.clk, job, done, x.run) }

func (x *ONNXModels) run(job *Job) {
	st, name := x.stages[job.Stage], x.names[job.Stage]
	job.Results = make([]dataplane.Result, len(job.Payload))
	for i := range job.Results {
		job.Results[i].Label = -1
	}
	fail := func(live []int, err error) {
		for _, i := range live {
			job.Payload[i] = &Payload{Err: err, ErrStage: name}
		}
	}
	if st == nil {
		return // a stage without a model: the payloads pass on unchanged
	}
	var live []int
	var ins []*kserve.TensorJSON
	var per []int64
	var data []float32
	for i, p := range job.Payload {
		if p == nil || p.Err != nil {
			continue
		}
		in := p.Input
		if in == nil {
			in = &p.Tensor
		}
		v, err := in.Float32s()
		if err != nil {
			fail([]int{i}, fmt.Errorf("input %q: %v", st.in, err))
			continue
		}
		if len(in.Shape) == 0 {
			fail([]int{i}, fmt.Errorf("input %q: no shape", st.in))
			continue
		}
		if len(live) > 0 && !sameDims(per, in.Shape[1:]) {
			fail([]int{i}, fmt.Errorf("input %q: shape %v differs from the batch's %v", st.in, in.Shape[1:], per))
			continue
		}
		if len(live) == 0 {
			per = in.Shape[1:]
		}
		live = append(live, i)
		ins = append(ins, in)
		data = append(data, v...)
	}
	n := len(live)
	if n == 0 {
		return
	}
	outs, err := st.sess.Run([]measure.FloatTensor{{Shape: append([]int64{int64(n)}, per...), Data: data}})
	if err != nil {
		fail(live, err)
		return
	}
	o := outs[0]
	if len(o.Shape) == 0 || o.Shape[0] != int64(n) || len(o.Data)%n != 0 || len(o.Data) == 0 {
		fail(live, fmt.Errorf("output %q: shape %v for a batch of %d", st.out, o.Shape, n))
		return
	}
	k := len(o.Data) / n
	for j, i := range live {
		vals := o.Data[j*k : (j+1)*k]
		cert, label := certainty(vals)
		job.Results[i] = dataplane.Result{Certainty: float32(cert), Label: int32(label)}
		job.Payload[i] = &Payload{Tensor: kserve.Float32Tensor(st.out, append([]int64{1}, o.Shape[1:]...), vals), Input: ins[j]}
	}
}

// certainty is a classifier output's confidence and class: the largest probability and its
// index (the first on ties). An output that is not a probability vector (negative values,
// or not summing to 1: logits) goes through a softmax first, so models exported without
// their final Softmax forward by the same measure.
func certainty(v []float32) (float64, int) {
	sum, neg := 0.0, false
	for _, f := range v {
		sum += float64(f)
		neg = neg || f < 0
	}
	p := make([]float64, len(v))
	if !neg && math.Abs(sum-1) <= 1e-3 {
		for i, f := range v {
			p[i] = float64(f)
		}
	} else {
		m := math.Inf(-1)
		for _, f := range v {
			m = max(m, float64(f))
		}
		s := 0.0
		for i, f := range v {
			p[i] = math.Exp(float64(f) - m)
			s += p[i]
		}
		for i := range p {
			p[i] /= s
		}
	}
	best, label := math.Inf(-1), -1
	for i, x := range p {
		if x > best {
			best, label = x, i
		}
	}
	if math.IsNaN(best) || label < 0 {
		return 0, -1
	}
	return best, label
}

// Close implements Executor.
func (x *ONNXModels) Close() error {
	err := closeSessions(x.owned)
	x.owned = nil
	return err
}
