package onnx

import (
	"fmt"
)

// Subgraph returns an ONNX model of the nodes [firstNode, endNode) of m (the node order of
// m.Nodes, which Graph keeps): its inputs are the tensors live across the left cut (produced
// earlier and still needed), its outputs the tensors live across the right cut (read by a later
// node, or graph outputs). A tensor live across both cuts that the block does not produce
// passes through: it is declared as both an input and an output, so chaining the blocks of a
// partition by tensor name reproduces the model. Initializers the block reads are copied;
// every input and output has a dynamic batch dimension. Shapes come from the last Graph call
// (Graph(nil) is run when there was none).
func Subgraph(m *Model, firstNode, endNode int) ([]byte, error) {
	if firstNode < 0 || endNode > len(m.Nodes) || firstNode >= endNode {
		return nil, fmt.Errorf("subgraph [%d, %d): must be a non-empty range within 0..%d", firstNode, endNode, len(m.Nodes))
	}
	if m.shapes == nil {
		if _, err := m.Graph(nil); err != nil {
			return nil, err
		}
	}
	live := m.liveAcross()
	left, right := live[firstNode], live[endNode]
	var gr []byte
	var inits []string
	seenInit := map[string]bool{}
	for i := firstNode; i < endNode; i++ {
		n := &m.Nodes[i]
		raw := n.raw
		if n.renamed {
			// A generated name must travel with the node (ONNX Runtime reports by name).
			raw = putString(append([]byte(nil), raw...), fNodeName, n.Name)
		}
		gr = putBytes(gr, fGraphNode, raw)
		for _, in := range n.Inputs {
			if _, ok := m.Initializers[in]; ok && !seenInit[in] {
				seenInit[in] = true
				inits = append(inits, in)
			}
		}
	}
	gr = putString(gr, fGraphName, fmt.Sprintf("%s[%d:%d]", m.GraphName, firstNode, endNode))
	for _, name := range inits {
		gr = putBytes(gr, fGraphInitializer, m.Initializers[name].raw)
	}
	for _, t := range left.order {
		vi, err := m.declare(t)
		if err != nil {
			return nil, err
		}
		gr = putBytes(gr, fGraphInput, vi)
	}
	for _, t := range right.order {
		vi, err := m.declare(t)
		if err != nil {
			return nil, err
		}
		gr = putBytes(gr, fGraphOutput, vi)
	}
	ir := m.IRVersion
	if ir < 4 {
		ir = 4 // initializers are no longer listed as inputs in the copy
	}
	return model(ir, m.Opsets, gr), nil
}

// BlockIO returns the input and output tensor names of the block [firstNode, endNode), in
// the order Subgraph declares them.
func BlockIO(m *Model, firstNode, endNode int) (inputs, outputs []string, err error) {
	if firstNode < 0 || endNode > len(m.Nodes) || firstNode >= endNode {
		return nil, nil, fmt.Errorf("block [%d, %d): must be a non-empty range within 0..%d", firstNode, endNode, len(m.Nodes))
	}
	live := m.liveAcross()
	return live[firstNode].order, live[endNode].order, nil
}

// liveSet is the set of tensors live at one position, in order of birth (graph inputs first).
type liveSet struct {
	set   map[string]bool
	order []string
}

// liveAcross returns, for every position p in 0..len(Nodes), the non-constant tensors
// produced before p (or graph inputs) and needed at or after p (read by a node at or after p,
// or a graph output, which counts as read at the end).
func (m *Model) liveAcross() []liveSet {
	n := len(m.Nodes)
	birth := map[string]int{}
	var order []string
	for _, in := range m.Inputs {
		birth[in.Name] = -1
		order = append(order, in.Name)
	}
	for i, nd := range m.Nodes {
		for _, o := range nd.Outputs {
			if o != "" {
				birth[o] = i
				order = append(order, o)
			}
		}
	}
	last := map[string]int{}
	for i, nd := range m.Nodes {
		for _, in := range nd.Inputs {
			if in != "" {
				last[in] = max(last[in], i)
			}
		}
	}
	for _, o := range m.Outputs {
		last[o.Name] = n
	}
	out := make([]liveSet, n+1)
	for p := range out {
		out[p] = liveSet{set: map[string]bool{}}
	}
	for _, t := range order {
		l, ok := last[t]
		if !ok {
			continue
		}
		for p := birth[t] + 1; p <= l; p++ {
			out[p].set[t] = true
			out[p].order = append(out[p].order, t)
		}
	}
	return out
}

// declare encodes a ValueInfo for tensor t with the batch as the symbol "N".
func (m *Model) declare(t string) ([]byte, error) {
	s, ok := m.shapes[t]
	if !ok {
		return nil, fmt.Errorf("tensor %q: no inferred shape", t)
	}
	dims := make([]Dim, len(s.dims))
	for i, d := range s.dims {
		if d == batchDim {
			dims[i] = Dim{Param: batchParam}
		} else {
			dims[i] = Dim{Value: d}
		}
	}
	return encodeValueInfo(t, s.dtype, dims), nil
}

// BatchedShape returns the inferred shape of tensor t from the last Graph call, with -1 for
// the batch dimension, and its element type.
func (m *Model) BatchedShape(t string) ([]int64, DataType, bool) {
	s, ok := m.shapes[t]
	if !ok {
		return nil, Undefined, false
	}
	out := make([]int64, len(s.dims))
	for i, d := range s.dims {
		if d == batchDim {
			d = -1
		}
		out[i] = d
	}
	return out, s.dtype, true
}

// ShapeValue returns the values of a small integer tensor computed from shapes (the
// Shape→Gather→Concat idiom) at the given batch size, when inference knows them. A block that
// receives such a tensor across a cut must be fed these values, not arbitrary data.
func (m *Model) ShapeValue(t string, batch int64) ([]int64, bool) {
	s, ok := m.shapes[t]
	if !ok || s.value == nil || s.konst {
		return nil, false
	}
	out := make([]int64, len(s.value))
	for i, v := range s.value {
		if v == batchDim {
			v = batch
		}
		out[i] = v
	}
	return out, true
}

// ExternalData lists the initializers whose data lives in separate files (ONNX's external
// data format, used for models over 2 GB): a model held in memory cannot reach them.
func (m *Model) ExternalData() []string {
	var out []string
	for _, name := range m.initOrder {
		if m.Initializers[name].External {
			out = append(out, name)
		}
	}
	return out
}
