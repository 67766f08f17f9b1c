// Package tinycascade builds the small, real model cascade that lets a new user watch
// CascadeServe forward requests on a CPU (CascadeServe §2.1, App. C):
// three ONNX classifiers of increasing size written by the profiler's ONNX writer
// (profiler/onnx.Build, seeded weights), their validation records, and KServe request bodies
// of one input the smallest model is sure of and one it is not.
//
// The models are nested: every model is the previous one plus one more residual branch on
// the logits,
//
//	mlp-s: z = head(x)
//	mlp-m: z = head(x) + b1(x)
//	mlp-l: z = head(x) + b1(x) + b2(x)
//	p = softmax(z)
//
// and the labels of the synthetic task are the argmax of a fourth, larger model that adds a
// branch b3 (the "reference", never served). Because the writer draws weights in node order
// from one seeded generator, the shared prefix of nodes gets the same weights in every model,
// so the small models are truncations of the reference: where the head's margin is wide its
// answer survives the branches (high certainty, usually right), where it is narrow the
// branches flip it (low certainty, often wrong). That is the property a cascade relies on
// (CascadeServe §2.1: confident answers of cheap models are usually correct), and it makes
// forwarding depend on the input, not on a coin.
package tinycascade

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/profiler/graph"
	"github.com/plan-dev/plan/profiler/onnx"
)

const (
	// InputDim is the per-sample input: a feature vector (e.g. a sentence embedding).
	InputDim = 32
	// Classes is the number of output classes.
	Classes = 4
	// Seed seeds the weights (profiler/onnx.Build) and, offset, the validation inputs.
	Seed = 12
	// InputScale is the standard deviation of the synthetic inputs.
	InputScale = 0.5
	// InputName and OutputName are the models' tensor names.
	InputName, OutputName = "input", "probs"
)

// Names are the served models, smallest first.
var Names = []string{"mlp-s", "mlp-m", "mlp-l"}

// reference is the labelling model (not served).
const reference = "mlp-ref"

// branch is one residual branch on the logits: Gemm layers of these widths (the last one
// maps to Classes), with Relu between them.
type branch []int64

// branches of the nested models: mlp-s has the head only, each next model one more branch,
// the reference all of them.
var branches = []branch{{64}, {128, 128}, {512}}

// Graph returns the IR graph of model name (one of Names or the reference).
func Graph(name string) (*graph.Graph, error) {
	depth := -1
	for i, n := range Names {
		if n == name {
			depth = i
		}
	}
	if name == reference {
		depth = len(branches)
	}
	if depth < 0 {
		return nil, fmt.Errorf("tinycascade: unknown model %q (known: %v)", name, Names)
	}
	g := &graph.Graph{Name: name, Tensors: map[string]graph.Tensor{}}
	g.Tensors[InputName] = graph.Tensor{Name: InputName, Shape: []int64{InputDim}, DType: "float32"}
	g.Inputs = []string{InputName}
	node := func(name, op string, in []string, width int64, attrs map[string][]int64) string {
		out := name + ":0"
		g.Tensors[out] = graph.Tensor{Name: out, Shape: []int64{width}, DType: "float32"}
		g.Nodes = append(g.Nodes, graph.Node{Name: name, Op: op, Inputs: in, Outputs: []string{out}, Attrs: attrs})
		return out
	}
	gemm := func(name, x string, n int64) string {
		return node(name, "Gemm", []string{x}, n, map[string][]int64{"transB": {1}})
	}
	// The head reads 4x and b1 2x (x+x, twice: no weights, so no change to the draws),
	// b2 and b3 x: the networks are positively homogeneous (ReLU, biases near zero), so each
	// branch corrects the logits less than the one before, as a larger model refines a
	// smaller one's answer rather than replacing it.
	x2 := node("scale2", "Add", []string{InputName, InputName}, InputDim, nil)
	x4 := node("scale4", "Add", []string{x2, x2}, InputDim, nil)
	branchIn := []string{x2, InputName, InputName}
	z := gemm("head", x4, Classes)
	for b := 0; b < depth; b++ {
		h := branchIn[b]
		for l, w := range branches[b] {
			h = gemm(fmt.Sprintf("b%d.fc%d", b+1, l), h, w)
			h = node(fmt.Sprintf("b%d.relu%d", b+1, l), "Relu", []string{h}, w, nil)
		}
		h = gemm(fmt.Sprintf("b%d.out", b+1), h, Classes)
		z = node(fmt.Sprintf("b%d.add", b+1), "Add", []string{z, h}, Classes, nil)
	}
	// The output keeps a fixed name whatever the depth, so every model of the cascade has
	// the same signature.
	g.Tensors[OutputName] = graph.Tensor{Name: OutputName, Shape: []int64{Classes}, DType: "float32"}
	g.Nodes = append(g.Nodes, graph.Node{Name: "softmax", Op: "Softmax", Inputs: []string{z}, Outputs: []string{OutputName},
		Attrs: map[string][]int64{"axis": {-1}}})
	g.Outputs = []string{OutputName}
	if err := g.Validate(); err != nil {
		return nil, err
	}
	if err := graph.Annotate(g); err != nil {
		return nil, err
	}
	return g, nil
}

// Build returns the ONNX bytes of model name (same name, same bytes).
func Build(name string) ([]byte, error) {
	g, err := Graph(name)
	if err != nil {
		return nil, err
	}
	return onnx.Build(g, Seed)
}

// Model is a parsed model that Eval runs in plain Go (float64 accumulation): the generator
// needs no ONNX Runtime, and tests compare ONNX Runtime's outputs against it.
type Model struct {
	m *onnx.Model
	w map[string][]float64
}

// Load parses ONNX bytes written by Build.
func Load(data []byte) (*Model, error) {
	m, err := onnx.Parse(data)
	if err != nil {
		return nil, err
	}
	w := map[string][]float64{}
	for name, t := range m.Initializers {
		v, err := t.Float64s()
		if err != nil {
			return nil, err
		}
		w[name] = v
	}
	return &Model{m: m, w: w}, nil
}

// Eval returns the model's output (class probabilities) on one input vector.
func (md *Model) Eval(x []float32) ([]float64, error) {
	if len(x) != InputDim {
		return nil, fmt.Errorf("input has %d values, want %d", len(x), InputDim)
	}
	vals := map[string][]float64{}
	in := make([]float64, len(x))
	for i, v := range x {
		in[i] = float64(v)
	}
	vals[md.m.Inputs[0].Name] = in
	get := func(name string) ([]float64, error) {
		if v, ok := vals[name]; ok {
			return v, nil
		}
		if v, ok := md.w[name]; ok {
			return v, nil
		}
		return nil, fmt.Errorf("tensor %q: not computed", name)
	}
	for i := range md.m.Nodes {
		n := &md.m.Nodes[i]
		ins := make([][]float64, len(n.Inputs))
		for k, name := range n.Inputs {
			v, err := get(name)
			if err != nil {
				return nil, fmt.Errorf("node %s: %w", n.Name, err)
			}
			ins[k] = v
		}
		var out []float64
		switch n.OpType {
		case "Gemm": // y = x·Wᵀ + b (transB = 1, as Graph writes it)
			xv, w, b := ins[0], ins[1], ins[2]
			k := len(xv)
			out = make([]float64, len(b))
			for o := range out {
				s := b[o]
				for j := 0; j < k; j++ {
					s += xv[j] * w[o*k+j]
				}
				out[o] = s
			}
		case "Relu":
			out = make([]float64, len(ins[0]))
			for j, v := range ins[0] {
				out[j] = max(v, 0)
			}
		case "Add":
			out = make([]float64, len(ins[0]))
			for j := range out {
				out[j] = ins[0][j] + ins[1][j]
			}
		case "Softmax":
			out = Softmax(ins[0])
		default:
			return nil, fmt.Errorf("node %s: operator %s is not one Graph writes", n.Name, n.OpType)
		}
		vals[n.Outputs[0]] = out
	}
	return get(md.m.Outputs[0].Name)
}

// Softmax of logits z.
func Softmax(z []float64) []float64 {
	m := math.Inf(-1)
	for _, v := range z {
		m = max(m, v)
	}
	out := make([]float64, len(z))
	var s float64
	for i, v := range z {
		out[i] = math.Exp(v - m)
		s += out[i]
	}
	for i := range out {
		out[i] /= s
	}
	return out
}

// Top returns a probability vector's certainty (its largest value) and label (its argmax, the
// first on ties): the certainty a cascade forwards by (max softmax probability, CascadeServe
// §4.2).
func Top(p []float64) (cert float64, label int) {
	label = -1
	for i, v := range p {
		if label < 0 || v > cert {
			cert, label = v, i
		}
	}
	return cert, label
}

// Inputs returns n seeded input vectors (sample i is the same for every n > i).
func Inputs(n int) [][]float32 {
	rng := rand.New(rand.NewPCG(Seed, 0x7ca5cade))
	out := make([][]float32, n)
	for i := range out {
		out[i] = make([]float32, InputDim)
		for j := range out[i] {
			out[i][j] = float32(InputScale * rng.NormFloat64())
		}
	}
	return out
}

// Outputs are every served model's probabilities and the reference labels on some inputs.
type Outputs struct {
	Probs  map[string][][]float64 // model -> sample -> probabilities
	Labels []int
}

// Run evaluates every served model and the reference on xs.
func Run(models map[string]*Model, ref *Model, xs [][]float32) (*Outputs, error) {
	o := &Outputs{Probs: map[string][][]float64{}, Labels: make([]int, len(xs))}
	for i, x := range xs {
		p, err := ref.Eval(x)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", reference, err)
		}
		_, o.Labels[i] = Top(p)
		for _, name := range Names {
			p, err := models[name].Eval(x)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			o.Probs[name] = append(o.Probs[name], p)
		}
	}
	return o, nil
}

// LoadAll builds and parses the served models and the reference.
func LoadAll() (map[string]*Model, *Model, error) {
	models := map[string]*Model{}
	for _, name := range append(append([]string(nil), Names...), reference) {
		data, err := Build(name)
		if err != nil {
			return nil, nil, err
		}
		m, err := Load(data)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		models[name] = m
	}
	ref := models[reference]
	delete(models, reference)
	return models, ref, nil
}

// Validation returns the records of o in the workload's format (certainties rounded to six
// decimals, as the bundled example's).
func (o *Outputs) Validation() []cascadesec.ValidationRecord {
	var out []cascadesec.ValidationRecord
	for s := range o.Labels {
		for _, name := range Names {
			c, l := Top(o.Probs[name][s])
			out = append(out, cascadesec.ValidationRecord{Sample: s, Model: name, Pred: strconv.Itoa(l),
				Cert: math.Round(c*1e6) / 1e6, Label: strconv.Itoa(o.Labels[s])})
		}
	}
	return out
}

// Accuracy is model name's fraction of samples answered like the reference.
func (o *Outputs) Accuracy(name string) float64 {
	ok := 0
	for s, l := range o.Labels {
		if _, p := Top(o.Probs[name][s]); p == l {
			ok++
		}
	}
	return float64(ok) / float64(len(o.Labels))
}
