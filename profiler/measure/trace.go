package measure

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/plan-dev/plan/internal/base/quantile"
	"github.com/plan-dev/plan/profiler/graph"
)

// traceEvent is one entry of ONNX Runtime's profiling output (Chrome trace format).
type traceEvent struct {
	Cat  string  `json:"cat"`
	Name string  `json:"name"`
	Dur  float64 `json:"dur"` // µs
	Ph   string  `json:"ph"`
	Args struct {
		OpName   string `json:"op_name"`
		Provider string `json:"provider"`
	} `json:"args"`
}

// Trace is a parsed ONNX Runtime profile: kernel durations per ORT node, in run order.
type Trace struct {
	// Kernels maps an ORT node name to its kernel durations (µs), one per run.
	Kernels map[string][]float64
	// Ops maps an ORT node name to its operator (e.g. "FusedConv").
	Ops map[string]string
	// Order lists ORT node names in first-execution order.
	Order []string
	// Runs holds the whole-run durations (µs), one per run.
	Runs []float64
}

const kernelSuffix = "_kernel_time"

// ParseTrace decodes ONNX Runtime's profiling JSON (a JSON array of trace events).
func ParseTrace(data []byte) (*Trace, error) {
	var evs []traceEvent
	if err := json.Unmarshal(data, &evs); err != nil {
		return nil, fmt.Errorf("ONNX Runtime profile: %w", err)
	}
	tr := &Trace{Kernels: map[string][]float64{}, Ops: map[string]string{}}
	for _, e := range evs {
		switch {
		case e.Cat == "Node" && strings.HasSuffix(e.Name, kernelSuffix):
			name := strings.TrimSuffix(e.Name, kernelSuffix)
			if _, seen := tr.Kernels[name]; !seen {
				tr.Order = append(tr.Order, name)
				tr.Ops[name] = e.Args.OpName
			}
			if e.Dur < 0 {
				return nil, fmt.Errorf("ONNX Runtime profile: event %q: negative duration", e.Name)
			}
			tr.Kernels[name] = append(tr.Kernels[name], e.Dur)
		case e.Cat == "Session" && e.Name == "model_run":
			tr.Runs = append(tr.Runs, e.Dur)
		}
	}
	if len(tr.Kernels) == 0 {
		return nil, errors.New("ONNX Runtime profile: no kernel events")
	}
	return tr, nil
}

// steady drops the first warmup samples when enough remain.
func steady(xs []float64, warmup int) []float64 {
	if len(xs) > warmup {
		return xs[warmup:]
	}
	return xs
}

// matchLayer finds the graph layer an ORT node stands for: the node of the same name, else
// the longest layer name contained in the ORT name at word boundaries (ONNX Runtime names
// fused and layout-transformed nodes after the node they replace, e.g. "fused Conv_3" or
// "Conv_3_token_12"; the boundary check keeps "Conv_1" from matching "Conv_10").
func matchLayer(ortName string, index map[string]int, names []string) (int, bool) {
	if i, ok := index[ortName]; ok {
		return i, true
	}
	best, bestLen := -1, 0
	for _, n := range names {
		if len(n) <= bestLen || n == "" {
			continue
		}
		for from := 0; ; {
			k := strings.Index(ortName[from:], n)
			if k < 0 {
				break
			}
			k += from
			end := k + len(n)
			okBefore := k == 0 || !isWordChar(ortName[k-1]) || ortName[k-1] == '_'
			okAfter := end == len(ortName) || !isAlnum(ortName[end])
			if okBefore && okAfter {
				best, bestLen = index[n], len(n)
				break
			}
			from = k + 1
		}
	}
	return best, best >= 0
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isWordChar(c byte) bool { return isAlnum(c) || c == '_' }

// elementwise operators are the ones ONNX Runtime folds into a neighbouring kernel.
var elementwise = map[string]bool{
	"Add": true, "Sub": true, "Mul": true, "Div": true, "Relu": true, "Sigmoid": true,
	"Tanh": true, "Clip": true, "LeakyRelu": true, "Erf": true, "Identity": true,
}

// sameOp reports whether an ORT kernel's operator implements the graph operator (FusedConv
// implements Conv, the NCHWc Conv too).
func sameOp(kernelOp, layerOp string) bool {
	return kernelOp == layerOp || strings.TrimPrefix(kernelOp, "Fused") == layerOp
}

// Attribute maps kernel times to the graph's layers. ONNX Runtime fuses layers (Conv with
// BatchNormalization, activations and residual adds; MatMul with Add) and names the fused
// kernel either after the first layer or after the last layer's output tensor (the NCHWc
// layout names "Relu_3.out_nchwc" a Conv kernel). So a kernel is matched to a layer by node or
// tensor name; when its operator is not that layer's, the kernel also contains the chain of
// producers up to the layer whose operator it is. Layers still without a kernel (eliminated
// reshapes, activations fused into a kernel named after the first layer) join the kernel of
// the nearest producer, else consumer, that has one. A kernel's time is split over its layers
// in proportion to FLOPs + bytes, so layer times add up to kernel times. Kernels matching no
// layer (inserted layout reorders) are returned as unattributed time.
func (tr *Trace) Attribute(g *graph.Graph, warmup int) (layers []LayerTime, unattributed, runUs float64) {
	producers := g.Producers()
	matched, own := tr.matchKernels(g)
	groups, memberOf, unattributed := tr.kernelGroups(g, producers, matched, own, warmup)
	attachUnmatched(g, producers, groups, memberOf)
	return spreadGroups(g, groups), unattributed, quantile.Of(steady(tr.Runs, warmup), 50)
}

// subResolutionUs is the time of a kernel whose median duration ONNX Runtime's profiler
// wrote as 0 µs (its events carry whole µs): half its resolution.
const subResolutionUs = 0.5

// kernelGroup is one kernel's median time and the layers it ran (its members).
type kernelGroup struct {
	kernel  string
	us      float64
	members []int
}

// matchKernels gives each kernel of tr.Order its layer (-1: none), by name first, then by
// operator; own marks the layers a kernel matched.
func (tr *Trace) matchKernels(g *graph.Graph) (matched []int, own []bool) {
	n := len(g.Nodes)
	index := map[string]int{}
	var names []string
	for i, nd := range g.Nodes {
		for _, o := range nd.Outputs {
			index[o] = i
			names = append(names, o)
		}
	}
	for i, nd := range g.Nodes {
		index[nd.Name] = i // a node name wins over an equal tensor name
		names = append(names, nd.Name)
	}
	sort.SliceStable(names, func(a, b int) bool { return len(names[a]) > len(names[b]) })
	matched = make([]int, len(tr.Order))
	own = make([]bool, n)
	for k, name := range tr.Order {
		i, ok := matchLayer(name, index, names)
		matched[k] = -1
		if ok {
			matched[k] = i
			own[i] = true
		}
	}
	// Kernels ONNX Runtime named afresh (e.g. "SkipLayerNormalization" for Add +
	// LayerNormalization) match by operator: a layer without a kernel whose operator the
	// kernel's name contains, preferring layers after the previous kernel's layer (kernels run
	// in topological order), then the longest operator name, then the earliest.
	prev := -1
	for k, name := range tr.Order {
		op := tr.Ops[name]
		if matched[k] >= 0 || op == "" {
			if matched[k] >= 0 {
				prev = matched[k]
			}
			continue
		}
		best := -1
		better := func(i, j int) bool { // is layer i a better match than layer j?
			if (i > prev) != (j > prev) {
				return i > prev
			}
			if len(g.Nodes[i].Op) != len(g.Nodes[j].Op) {
				return len(g.Nodes[i].Op) > len(g.Nodes[j].Op)
			}
			return i < j
		}
		for i, nd := range g.Nodes {
			if !own[i] && strings.Contains(op, nd.Op) && (best < 0 || better(i, best)) {
				best = i
			}
		}
		if best >= 0 {
			matched[k] = best
			own[best] = true
			prev = best
		}
	}
	return matched, own
}

// kernelGroups makes one group per kernel: its matched layer and the chain of producers it
// absorbed. Kernels with no layer add their time to unattributed.
func (tr *Trace) kernelGroups(g *graph.Graph, producers map[string]int, matched []int, own []bool, warmup int) (groups []kernelGroup, memberOf [][]int, unattributed float64) {
	producer := func(i int) int {
		for _, in := range g.Nodes[i].Inputs {
			if p, ok := producers[in]; ok && !g.Tensors[in].Const {
				return p
			}
		}
		return -1
	}
	memberOf = make([][]int, len(g.Nodes))
	for k, name := range tr.Order {
		// ONNX Runtime's profiler writes whole µs: a kernel that ran in under one reads 0.
		// It ran, so it counts as half the resolution (the middle of [0, 1) µs), never 0.
		med := max(quantile.Of(steady(tr.Kernels[name], warmup), 50), subResolutionUs)
		l := matched[k]
		if l < 0 {
			unattributed += med
			continue
		}
		chain := []int{l}
		if op := tr.Ops[name]; op != "" && !sameOp(op, g.Nodes[l].Op) {
			// Named after the chain's last layer: take the producers up to the layer whose
			// operator the kernel is (the NCHWc Conv named after the Relu it absorbed).
			var path []int
			found := false
			for cur, steps := l, 0; steps < 16; steps++ {
				p := producer(cur)
				if p < 0 || own[p] {
					break
				}
				path = append(path, p)
				if sameOp(op, g.Nodes[p].Op) {
					chain = append(chain, path...)
					found = true
					break
				}
				cur = p
			}
			// A composite kernel (SkipLayerNormalization, BiasGelu) absorbed the
			// elementwise layers feeding its main operator.
			if !found && strings.Contains(op, g.Nodes[l].Op) {
				for cur := l; ; {
					p := producer(cur)
					if p < 0 || own[p] || !elementwise[g.Nodes[p].Op] {
						break
					}
					chain = append(chain, p)
					cur = p
				}
			}
		}
		gid := len(groups)
		groups = append(groups, kernelGroup{kernel: name, us: med, members: chain})
		for _, m := range chain {
			memberOf[m] = append(memberOf[m], gid)
		}
	}
	return groups, memberOf, unattributed
}

// attachUnmatched gives every layer no kernel ran to the group of the nearest assigned layer
// upstream (else downstream).
func attachUnmatched(g *graph.Graph, producers map[string]int, groups []kernelGroup, memberOf [][]int) {
	assigned := func(i int) bool { return len(memberOf[i]) > 0 }
	var up func(i int, seen map[int]bool) int
	up = func(i int, seen map[int]bool) int {
		if seen[i] {
			return -1
		}
		seen[i] = true
		for _, in := range g.Nodes[i].Inputs {
			if p, ok := producers[in]; ok && !g.Tensors[in].Const {
				if assigned(p) {
					return p
				}
				if h := up(p, seen); h >= 0 {
					return h
				}
			}
		}
		return -1
	}
	consumers := map[string][]int{}
	for i, nd := range g.Nodes {
		for _, in := range nd.Inputs {
			consumers[in] = append(consumers[in], i)
		}
	}
	var down func(i int, seen map[int]bool) int
	down = func(i int, seen map[int]bool) int {
		if seen[i] {
			return -1
		}
		seen[i] = true
		for _, o := range g.Nodes[i].Outputs {
			for _, c := range consumers[o] {
				if assigned(c) {
					return c
				}
				if h := down(c, seen); h >= 0 {
					return h
				}
			}
		}
		return -1
	}
	// Attach the rest against the kernel assignment so far (a snapshot, so the result does
	// not depend on the order layers are visited in).
	extra := map[int]int{}
	for i := range g.Nodes {
		if assigned(i) {
			continue
		}
		h := up(i, map[int]bool{})
		if h < 0 {
			h = down(i, map[int]bool{})
		}
		if h >= 0 {
			extra[i] = memberOf[h][0]
		}
	}
	for i := range g.Nodes {
		if gid, ok := extra[i]; ok {
			memberOf[i] = []int{gid}
			groups[gid].members = append(groups[gid].members, i)
		}
	}
}

// spreadGroups splits each group's time over its members in proportion to their work.
func spreadGroups(g *graph.Graph, groups []kernelGroup) []LayerTime {
	n := len(g.Nodes)
	weight := func(i int) float64 { return g.Nodes[i].FLOPs + g.Nodes[i].ActBytes/4 + 1 }
	layers := make([]LayerTime, n)
	for i, nd := range g.Nodes {
		layers[i] = LayerTime{Name: nd.Name, Op: nd.Op}
	}
	for _, gr := range groups {
		var w float64
		for _, m := range gr.members {
			w += weight(m)
		}
		for _, m := range gr.members {
			layers[m].Us += gr.us * weight(m) / w
			if layers[m].Kernel == "" {
				layers[m].Kernel = gr.kernel
				layers[m].Fused = len(gr.members) > 1
			}
		}
	}
	return layers
}
