// Package onnx reads and writes ONNX models without generated protobuf code: a hand-written
// decoder over protowire extracts what the profiler needs (nodes, attributes, initializer
// shapes, graph inputs/outputs with symbolic dimensions, opsets), shape inference gives every
// tensor a per-sample shape, and the result becomes the profiler's graph IR. The writer side
// materializes an IR graph as a runnable ONNX model with seeded random weights (Build) and cuts
// a block of nodes out of a model as its own model (Subgraph), which is how the measured
// backend times blocks one by one.
//
// Large payloads (initializer data) are never copied: the model keeps sub-slices of the input,
// so a model is only valid while the bytes it was parsed from are unchanged.
package onnx

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/profiler/graph"
)

// DataType is ONNX's TensorProto.DataType.
type DataType int32

// The element types the profiler knows by name.
const (
	Undefined DataType = 0
	Float     DataType = 1
	Uint8     DataType = 2
	Int8      DataType = 3
	Uint16    DataType = 4
	Int16     DataType = 5
	Int32     DataType = 6
	Int64     DataType = 7
	String    DataType = 8
	Bool      DataType = 9
	Float16   DataType = 10
	Double    DataType = 11
	Uint32    DataType = 12
	Uint64    DataType = 13
	BFloat16  DataType = 16
)

var dtypeNames = map[DataType]string{
	Float: "float32", Uint8: "uint8", Int8: "int8", Uint16: "uint16", Int16: "int16",
	Int32: "int32", Int64: "int64", String: "string", Bool: "bool", Float16: "float16",
	Double: "float64", Uint32: "uint32", Uint64: "uint64", BFloat16: "bfloat16",
}

// String is the IR's dtype name ("float32", "int64", ...).
func (d DataType) String() string {
	if s, ok := dtypeNames[d]; ok {
		return s
	}
	return fmt.Sprintf("dtype%d", int32(d))
}

// Size is the in-memory size of one element (0 for strings and unknown types).
func (d DataType) Size() int64 {
	switch d {
	case Double, Int64, Uint64:
		return 8
	case Float, Int32, Uint32:
		return 4
	case Float16, BFloat16, Int16, Uint16:
		return 2
	case Int8, Uint8, Bool:
		return 1
	}
	return 0
}

// dtypeByName inverts String for the writer.
func dtypeByName(s string) (DataType, bool) {
	if s == "float" {
		return Float, true
	}
	if s == "double" {
		return Double, true
	}
	for d, n := range dtypeNames {
		if n == s {
			return d, true
		}
	}
	return Undefined, false
}

// Dim is one dimension of a declared shape: a known size, a named symbol, or unknown.
type Dim struct {
	Value int64  // > 0 when known
	Param string // symbolic name, e.g. "batch_size"
}

// Known reports whether the dimension has a fixed size.
func (d Dim) Known() bool { return d.Value > 0 }

func (d Dim) String() string {
	switch {
	case d.Value > 0:
		return fmt.Sprint(d.Value)
	case d.Param != "":
		return d.Param
	}
	return "?"
}

// ValueInfo is a declared graph input, output or intermediate value.
type ValueInfo struct {
	Name     string
	Elem     DataType
	HasShape bool // false when the file declares no shape (unknown rank)
	Dims     []Dim
}

// Tensor is an initializer or a constant: its shape and type, and where its data is.
type Tensor struct {
	Name     string
	Dims     []int64
	DataType DataType
	// External is true when the data lives in a separate file (data_location = EXTERNAL).
	External bool

	raw      []byte // the whole TensorProto encoding (copied verbatim into subgraphs)
	rawData  []byte // raw_data payload, when present
	int64s   []int64
	int32s   []int64
	float32s []float32
	float64s []float64
}

// Elements is the number of elements (1 for a scalar).
func (t *Tensor) Elements() int64 {
	n := int64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// Bytes is the in-memory size of the tensor's data.
func (t *Tensor) Bytes() int64 { return t.Elements() * t.DataType.Size() }

// readable checks that t's values can be decoded here: at most 2^20 of them, stored in the
// file, and when they are raw bytes, n values of size bytes each (size 0: no raw data).
func (t *Tensor) readable() (n, size int64, err error) {
	n = t.Elements()
	if n > 1<<20 {
		return 0, 0, fmt.Errorf("tensor %q: %d elements is too large to read as values", t.Name, n)
	}
	if t.External {
		return 0, 0, fmt.Errorf("tensor %q: data is stored externally", t.Name)
	}
	if t.rawData != nil {
		size = t.DataType.Size()
		if size == 0 || int64(len(t.rawData)) != n*size {
			return 0, 0, fmt.Errorf("tensor %q: raw data is %d bytes, want %d elements of %s", t.Name, len(t.rawData), n, t.DataType)
		}
	}
	return n, size, nil
}

// Int64s decodes an integer tensor's values (used for Reshape shapes, axes and the like).
func (t *Tensor) Int64s() ([]int64, error) {
	n, size, err := t.readable()
	if err != nil {
		return nil, err
	}
	switch {
	case t.rawData != nil:
		out := make([]int64, n)
		for i := range out {
			b := t.rawData[int64(i)*size:]
			switch t.DataType {
			case Int64, Uint64:
				out[i] = int64(leUint(b, 8))
			case Int32:
				out[i] = int64(int32(leUint(b, 4)))
			case Uint32:
				out[i] = int64(uint32(leUint(b, 4)))
			case Int16:
				out[i] = int64(int16(leUint(b, 2)))
			case Uint16:
				out[i] = int64(uint16(leUint(b, 2)))
			case Int8:
				out[i] = int64(int8(b[0]))
			case Uint8, Bool:
				out[i] = int64(b[0])
			case Float:
				out[i] = int64(math.Float32frombits(uint32(leUint(b, 4))))
			case Double:
				out[i] = int64(math.Float64frombits(leUint(b, 8)))
			default:
				return nil, fmt.Errorf("tensor %q: cannot read %s values as integers", t.Name, t.DataType)
			}
		}
		return out, nil
	case t.int64s != nil:
		return checkCount(t, t.int64s)
	case t.int32s != nil:
		return checkCount(t, t.int32s)
	case t.float32s != nil:
		out := make([]int64, len(t.float32s))
		for i, f := range t.float32s {
			out[i] = int64(f)
		}
		return checkCount(t, out)
	case t.float64s != nil:
		out := make([]int64, len(t.float64s))
		for i, f := range t.float64s {
			out[i] = int64(f)
		}
		return checkCount(t, out)
	}
	if n == 0 {
		return []int64{}, nil
	}
	return nil, fmt.Errorf("tensor %q: has no data", t.Name)
}

func checkCount(t *Tensor, v []int64) ([]int64, error) {
	if int64(len(v)) != t.Elements() {
		return nil, fmt.Errorf("tensor %q: has %d values, shape %v wants %d", t.Name, len(v), t.Dims, t.Elements())
	}
	return v, nil
}

func leUint(b []byte, n int) uint64 {
	var v uint64
	for i := n - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// AttrType is ONNX's AttributeProto.AttributeType.
type AttrType int32

// Attribute types the reader decodes; graphs and sparse tensors are kept opaque.
const (
	AttrFloat   AttrType = 1
	AttrInt     AttrType = 2
	AttrString  AttrType = 3
	AttrTensor  AttrType = 4
	AttrGraph   AttrType = 5
	AttrFloats  AttrType = 6
	AttrInts    AttrType = 7
	AttrStrings AttrType = 8
)

// Attribute is one node attribute.
type Attribute struct {
	Name    string
	Type    AttrType
	F       float32
	I       int64
	S       []byte
	T       *Tensor
	Floats  []float32
	Ints    []int64
	Strings [][]byte
}

// Node is one operator of the graph.
type Node struct {
	Name    string
	OpType  string
	Domain  string
	Inputs  []string // "" marks an omitted optional input
	Outputs []string
	Attrs   []Attribute

	raw     []byte // the NodeProto encoding (copied into subgraphs)
	renamed bool   // Name was generated: the copy must carry it
}

// Attr returns the attribute called name.
func (n *Node) Attr(name string) (*Attribute, bool) {
	for i := range n.Attrs {
		if n.Attrs[i].Name == name {
			return &n.Attrs[i], true
		}
	}
	return nil, false
}

// AttrInt returns an integer attribute or def.
func (n *Node) AttrInt(name string, def int64) int64 {
	if a, ok := n.Attr(name); ok {
		if a.Type == AttrInts && len(a.Ints) > 0 {
			return a.Ints[0]
		}
		return a.I
	}
	return def
}

// AttrInts returns an integer-list attribute or nil.
func (n *Node) AttrInts(name string) []int64 {
	if a, ok := n.Attr(name); ok {
		if a.Type == AttrInt {
			return []int64{a.I}
		}
		return a.Ints
	}
	return nil
}

// AttrFloat returns a float attribute or def.
func (n *Node) AttrFloat(name string, def float32) float32 {
	if a, ok := n.Attr(name); ok {
		return a.F
	}
	return def
}

// Model is a parsed ONNX ModelProto.
type Model struct {
	IRVersion    int64
	ProducerName string
	// Opsets maps an operator-set domain ("" = the default ai.onnx domain) to its version.
	Opsets    map[string]int64
	GraphName string
	// Nodes are in topological order. Constant nodes are turned into initializers.
	Nodes        []Node
	Initializers map[string]*Tensor
	// Inputs are the graph inputs that are not initializers; Outputs the graph outputs.
	Inputs  []ValueInfo
	Outputs []ValueInfo
	// ValueInfo holds shapes the file declares for intermediate values (used when shape
	// inference has no rule for an operator).
	ValueInfo map[string]ValueInfo

	initOrder []string // initializer names in file order, for deterministic output
	// binding is the per-sample input shape of the last successful Graph call; Subgraph
	// reuses it to declare the shapes of a block's inputs and outputs.
	binding []int64
	shapes  map[string]shapeInfo
}

// Opset is the version of the default (ai.onnx) operator set.
func (m *Model) Opset() int64 {
	if v, ok := m.Opsets[""]; ok {
		return v
	}
	return m.Opsets["ai.onnx"]
}

// MaxModelBytes bounds the ONNX files read: protobuf messages cannot exceed 2 GiB (larger
// models keep their weights in external data files).
const MaxModelBytes = 2 << 30

// ReadFile reads an ONNX file's bytes: a regular file of at most MaxModelBytes (anything
// else, such as a FIFO or /dev/zero, is refused before a byte is read), errors as a
// *formats.ReadError naming the path.
func ReadFile(path string) ([]byte, error) { return formats.ReadBytesLimit(path, MaxModelBytes) }

// Load reads and parses an ONNX file.
func Load(path string) (*Model, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	m, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// Parse decodes an ONNX ModelProto. Anything that is not one fails with an error that says
// "not an ONNX model" (errors.Is(err, ErrNotONNX) holds).
func Parse(data []byte) (*Model, error) {
	m, err := parse(data)
	if err != nil {
		if errors.Is(err, errNotONNX) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", errNotONNX, err)
	}
	return m, nil
}

// ErrNotONNX is returned (wrapped) by Parse for input that is not an ONNX model.
var ErrNotONNX = errNotONNX

// check validates references, names unnamed nodes and puts the nodes in topological order.
func (m *Model) check() error {
	if len(m.Nodes) == 0 {
		return errors.New("graph has no nodes")
	}
	taken := map[string]bool{}
	for _, n := range m.Nodes {
		taken[n.Name] = true
	}
	// ONNX Runtime reports profiling events by node name, so every node needs a unique one:
	// the first holder of a name keeps it, empty and repeated names get a generated one.
	kept := map[string]bool{}
	for i := range m.Nodes {
		n := &m.Nodes[i]
		if n.Name != "" && !kept[n.Name] {
			kept[n.Name] = true
			continue
		}
		base := n.OpType
		if n.Name != "" {
			base = n.Name
		}
		for k := i; ; k++ {
			cand := fmt.Sprintf("%s_%d", base, k)
			if !taken[cand] {
				n.Name = cand
				taken[cand], kept[cand] = true, true
				break
			}
		}
		n.renamed = true
	}
	return m.toposort()
}

// toposort orders the nodes so every node comes after the producers of its inputs (ONNX
// requires it, but some exporters do not comply). Stable among ready nodes.
func (m *Model) toposort() error {
	producer := map[string]int{}
	for i, n := range m.Nodes {
		for _, o := range n.Outputs {
			if o == "" {
				continue
			}
			if j, dup := producer[o]; dup {
				return fmt.Errorf("tensor %q: produced by nodes %q and %q", o, m.Nodes[j].Name, n.Name)
			}
			producer[o] = i
		}
	}
	known := map[string]bool{}
	for _, in := range m.Inputs {
		known[in.Name] = true
	}
	for name := range m.Initializers {
		known[name] = true
	}
	indeg := make([]int, len(m.Nodes))
	users := make([][]int, len(m.Nodes))
	for i, n := range m.Nodes {
		seen := map[int]bool{}
		for _, in := range n.Inputs {
			if in == "" {
				continue
			}
			p, ok := producer[in]
			if !ok {
				if !known[in] {
					return fmt.Errorf("node %q: input %q is not a graph input, initializer or node output", n.Name, in)
				}
				continue
			}
			if p == i {
				return fmt.Errorf("node %q: reads its own output %q", n.Name, in)
			}
			if !seen[p] {
				seen[p] = true
				indeg[i]++
				users[p] = append(users[p], i)
			}
		}
	}
	order := graph.StableOrder(indeg, users)
	if len(order) != len(m.Nodes) {
		return errors.New("graph has a cycle")
	}
	nodes := make([]Node, len(order))
	for k, i := range order {
		nodes[k] = m.Nodes[i]
	}
	m.Nodes = nodes
	for _, o := range m.Outputs {
		if _, ok := producer[o.Name]; !ok && !known[o.Name] {
			return fmt.Errorf("graph output %q: produced by no node", o.Name)
		}
	}
	return nil
}

// String summarizes the model for logs.
func (m *Model) String() string {
	var ins []string
	for _, in := range m.Inputs {
		ds := make([]string, len(in.Dims))
		for i, d := range in.Dims {
			ds[i] = d.String()
		}
		ins = append(ins, fmt.Sprintf("%s[%s]", in.Name, strings.Join(ds, ",")))
	}
	return fmt.Sprintf("onnx model %q (opset %d, %d nodes, %d initializers, inputs %s)",
		m.GraphName, m.Opset(), len(m.Nodes), len(m.Initializers), strings.Join(ins, " "))
}
