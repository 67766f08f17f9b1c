package onnx

// The protobuf side of reading a model: ModelProto, GraphProto, NodeProto, AttributeProto,
// TensorProto and ValueInfoProto decoded field by field with protowire.

import (
	"errors"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

func parse(data []byte) (*Model, error) {
	if len(data) == 0 {
		return nil, errors.New("empty input")
	}
	fs, err := fields(data)
	if err != nil {
		return nil, err
	}
	m := &Model{Opsets: map[string]int64{}, Initializers: map[string]*Tensor{}, ValueInfo: map[string]ValueInfo{}}
	var graph []byte
	for _, f := range fs {
		switch f.num {
		case fModelIRVersion:
			if err := f.want(protowire.VarintType, "ir_version"); err != nil {
				return nil, err
			}
			m.IRVersion = int64(f.v)
		case fModelProducerName:
			if err := f.want(protowire.BytesType, "producer_name"); err != nil {
				return nil, err
			}
			m.ProducerName = string(f.b)
		case fModelGraph:
			if err := f.want(protowire.BytesType, "graph"); err != nil {
				return nil, err
			}
			graph = f.b
		case fModelOpsetImport:
			if err := f.want(protowire.BytesType, "opset_import"); err != nil {
				return nil, err
			}
			dom, ver, err := parseOpset(f.b)
			if err != nil {
				return nil, err
			}
			m.Opsets[dom] = ver
		}
	}
	// A ModelProto always has an IR version and a graph; random bytes that happen to decode as
	// protobuf almost never do.
	if m.IRVersion <= 0 || m.IRVersion > 100 {
		return nil, fmt.Errorf("ir_version %d is missing or out of range", m.IRVersion)
	}
	if graph == nil {
		return nil, errors.New("no graph")
	}
	if err := m.parseGraph(graph); err != nil {
		return nil, fmt.Errorf("graph: %w", err)
	}
	if len(m.Opsets) == 0 {
		// IR < 3 files carry no opset import; ONNX then means opset 1.
		m.Opsets[""] = 1
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	return m, nil
}

func parseOpset(b []byte) (string, int64, error) {
	fs, err := fields(b)
	if err != nil {
		return "", 0, fmt.Errorf("opset_import: %w", err)
	}
	var dom string
	var ver int64
	for _, f := range fs {
		switch f.num {
		case fOpsetDomain:
			if err := f.want(protowire.BytesType, "opset domain"); err != nil {
				return "", 0, err
			}
			dom = string(f.b)
		case fOpsetVersion:
			if err := f.want(protowire.VarintType, "opset version"); err != nil {
				return "", 0, err
			}
			ver = int64(f.v)
		}
	}
	if dom == "ai.onnx" {
		dom = ""
	}
	return dom, ver, nil
}

func (m *Model) parseGraph(b []byte) error {
	fs, err := fields(b)
	if err != nil {
		return err
	}
	var inputs []ValueInfo
	for _, f := range fs {
		switch f.num {
		case fGraphNode:
			if err := f.want(protowire.BytesType, "node"); err != nil {
				return err
			}
			n, err := parseNode(f.b)
			if err != nil {
				return fmt.Errorf("node %d: %w", len(m.Nodes), err)
			}
			m.Nodes = append(m.Nodes, n)
		case fGraphName:
			if err := f.want(protowire.BytesType, "name"); err != nil {
				return err
			}
			m.GraphName = string(f.b)
		case fGraphInitializer:
			if err := f.want(protowire.BytesType, "initializer"); err != nil {
				return err
			}
			t, err := parseTensor(f.b)
			if err != nil {
				return fmt.Errorf("initializer %d: %w", len(m.initOrder), err)
			}
			if t.Name == "" {
				return fmt.Errorf("initializer %d: has no name", len(m.initOrder))
			}
			if _, dup := m.Initializers[t.Name]; !dup {
				m.initOrder = append(m.initOrder, t.Name)
			}
			m.Initializers[t.Name] = t
		case fGraphInput, fGraphOutput, fGraphValueInfo:
			if err := f.want(protowire.BytesType, "value info"); err != nil {
				return err
			}
			vi, err := parseValueInfo(f.b)
			if err != nil {
				return err
			}
			switch f.num {
			case fGraphInput:
				inputs = append(inputs, vi)
			case fGraphOutput:
				m.Outputs = append(m.Outputs, vi)
			default:
				m.ValueInfo[vi.Name] = vi
			}
		}
	}
	// Before IR 4 every initializer was also listed as a graph input; those are weights, not
	// inputs the caller feeds.
	for _, in := range inputs {
		if _, isInit := m.Initializers[in.Name]; !isInit {
			m.Inputs = append(m.Inputs, in)
		}
	}
	// Constant nodes become initializers: a constant never crosses a cut, and every block
	// that reads it gets its own copy.
	kept := m.Nodes[:0]
	for _, n := range m.Nodes {
		if n.OpType == "Constant" && n.Domain == "" && len(n.Outputs) == 1 {
			if a, ok := n.Attr("value"); ok && a.T != nil {
				t := *a.T
				t.Name = n.Outputs[0]
				t.raw = renameTensor(t.raw, t.Name)
				if _, dup := m.Initializers[t.Name]; !dup {
					m.initOrder = append(m.initOrder, t.Name)
				}
				m.Initializers[t.Name] = &t
				continue
			}
		}
		kept = append(kept, n)
	}
	m.Nodes = kept
	return nil
}

// renameTensor re-encodes a TensorProto with a new name by appending the name field: for a
// non-repeated proto field the last occurrence wins.
func renameTensor(raw []byte, name string) []byte {
	out := append([]byte(nil), raw...)
	return putString(out, fTensorName, name)
}

func parseNode(b []byte) (Node, error) {
	var n Node
	n.raw = b
	fs, err := fields(b)
	if err != nil {
		return n, err
	}
	for _, f := range fs {
		switch f.num {
		case fNodeInput, fNodeOutput, fNodeName, fNodeOpType, fNodeDomain:
			if err := f.want(protowire.BytesType, "node string"); err != nil {
				return n, err
			}
			s := string(f.b)
			switch f.num {
			case fNodeInput:
				n.Inputs = append(n.Inputs, s)
			case fNodeOutput:
				n.Outputs = append(n.Outputs, s)
			case fNodeName:
				n.Name = s
			case fNodeOpType:
				n.OpType = s
			case fNodeDomain:
				n.Domain = s
			}
		case fNodeAttribute:
			if err := f.want(protowire.BytesType, "attribute"); err != nil {
				return n, err
			}
			a, err := parseAttr(f.b)
			if err != nil {
				return n, fmt.Errorf("attribute %d: %w", len(n.Attrs), err)
			}
			n.Attrs = append(n.Attrs, a)
		}
	}
	if n.OpType == "" {
		return n, errors.New("no op_type")
	}
	if n.Domain == "ai.onnx" {
		n.Domain = ""
	}
	return n, nil
}

func parseAttr(b []byte) (Attribute, error) {
	var a Attribute
	fs, err := fields(b)
	if err != nil {
		return a, err
	}
	for _, f := range fs {
		switch f.num {
		case fAttrName:
			if err := f.want(protowire.BytesType, "attribute name"); err != nil {
				return a, err
			}
			a.Name = string(f.b)
		case fAttrType:
			if err := f.want(protowire.VarintType, "attribute type"); err != nil {
				return a, err
			}
			a.Type = AttrType(f.v)
		case fAttrF:
			if err := f.want(protowire.Fixed32Type, "attribute f"); err != nil {
				return a, err
			}
			a.F = math.Float32frombits(uint32(f.v))
		case fAttrI:
			if err := f.want(protowire.VarintType, "attribute i"); err != nil {
				return a, err
			}
			a.I = int64(f.v)
		case fAttrS:
			if err := f.want(protowire.BytesType, "attribute s"); err != nil {
				return a, err
			}
			a.S = f.b
		case fAttrT:
			if err := f.want(protowire.BytesType, "attribute t"); err != nil {
				return a, err
			}
			t, err := parseTensor(f.b)
			if err != nil {
				return a, fmt.Errorf("attribute tensor: %w", err)
			}
			a.T = t
		case fAttrFloats:
			if a.Floats, err = f.floats(a.Floats, "attribute floats"); err != nil {
				return a, err
			}
		case fAttrInts:
			if a.Ints, err = f.ints(a.Ints, "attribute ints"); err != nil {
				return a, err
			}
		case fAttrStrings:
			if err := f.want(protowire.BytesType, "attribute strings"); err != nil {
				return a, err
			}
			a.Strings = append(a.Strings, f.b)
		}
	}
	if a.Name == "" {
		return a, errors.New("attribute without a name")
	}
	if a.Type == 0 {
		// IR < 4 files may omit the type; infer it from the populated field.
		switch {
		case a.T != nil:
			a.Type = AttrTensor
		case a.Ints != nil:
			a.Type = AttrInts
		case a.Floats != nil:
			a.Type = AttrFloats
		case a.Strings != nil:
			a.Type = AttrStrings
		case a.S != nil:
			a.Type = AttrString
		}
	}
	return a, nil
}

func parseTensor(b []byte) (*Tensor, error) {
	t := &Tensor{raw: b}
	fs, err := fields(b)
	if err != nil {
		return nil, err
	}
	for _, f := range fs {
		switch f.num {
		case fTensorDims:
			if t.Dims, err = f.ints(t.Dims, "dims"); err != nil {
				return nil, err
			}
		case fTensorDataType:
			if err := f.want(protowire.VarintType, "data_type"); err != nil {
				return nil, err
			}
			t.DataType = DataType(int32(f.v))
		case fTensorName:
			if err := f.want(protowire.BytesType, "tensor name"); err != nil {
				return nil, err
			}
			t.Name = string(f.b)
		case fTensorRawData:
			if err := f.want(protowire.BytesType, "raw_data"); err != nil {
				return nil, err
			}
			t.rawData = f.b
			if t.rawData == nil {
				t.rawData = []byte{}
			}
		case fTensorInt64Data:
			if t.int64s, err = f.ints(t.int64s, "int64_data"); err != nil {
				return nil, err
			}
		case fTensorInt32Data:
			if t.int32s, err = f.ints(t.int32s, "int32_data"); err != nil {
				return nil, err
			}
			for i, v := range t.int32s {
				t.int32s[i] = int64(int32(v))
			}
		case fTensorFloatData:
			if t.float32s, err = f.floats(t.float32s, "float_data"); err != nil {
				return nil, err
			}
		case fTensorDoubleData:
			switch f.typ {
			case protowire.Fixed64Type:
				t.float64s = append(t.float64s, math.Float64frombits(f.v))
			case protowire.BytesType:
				if len(f.b)%8 != 0 {
					return nil, errors.New("double_data: bad packed length")
				}
				for i := 0; i < len(f.b); i += 8 {
					t.float64s = append(t.float64s, math.Float64frombits(leUint(f.b[i:], 8)))
				}
			default:
				return nil, errors.New("double_data: bad wire type")
			}
		case fTensorDataLocation:
			if err := f.want(protowire.VarintType, "data_location"); err != nil {
				return nil, err
			}
			t.External = f.v == 1
		}
	}
	for _, d := range t.Dims {
		if d < 0 {
			return nil, fmt.Errorf("tensor %q: negative dimension %d", t.Name, d)
		}
	}
	return t, nil
}

func parseValueInfo(b []byte) (ValueInfo, error) {
	var vi ValueInfo
	fs, err := fields(b)
	if err != nil {
		return vi, fmt.Errorf("value info: %w", err)
	}
	for _, f := range fs {
		switch f.num {
		case fValueInfoName:
			if err := f.want(protowire.BytesType, "value name"); err != nil {
				return vi, err
			}
			vi.Name = string(f.b)
		case fValueInfoType:
			if err := f.want(protowire.BytesType, "value type"); err != nil {
				return vi, err
			}
			if err := parseType(f.b, &vi); err != nil {
				return vi, fmt.Errorf("value %q: %w", vi.Name, err)
			}
		}
	}
	if vi.Name == "" {
		return vi, errors.New("value info without a name")
	}
	return vi, nil
}

func parseType(b []byte, vi *ValueInfo) error {
	fs, err := fields(b)
	if err != nil {
		return err
	}
	for _, f := range fs {
		if f.num != fTypeTensor {
			continue // sequences, maps, optionals: the profiler treats them as untyped
		}
		if err := f.want(protowire.BytesType, "tensor_type"); err != nil {
			return err
		}
		tfs, err := fields(f.b)
		if err != nil {
			return err
		}
		for _, tf := range tfs {
			switch tf.num {
			case fTensorTypeElem:
				if err := tf.want(protowire.VarintType, "elem_type"); err != nil {
					return err
				}
				vi.Elem = DataType(int32(tf.v))
			case fTensorTypeShape:
				if err := tf.want(protowire.BytesType, "shape"); err != nil {
					return err
				}
				vi.HasShape = true
				sfs, err := fields(tf.b)
				if err != nil {
					return err
				}
				for _, sf := range sfs {
					if sf.num != fShapeDim {
						continue
					}
					if err := sf.want(protowire.BytesType, "dim"); err != nil {
						return err
					}
					d, err := parseDim(sf.b)
					if err != nil {
						return err
					}
					vi.Dims = append(vi.Dims, d)
				}
			}
		}
	}
	return nil
}

func parseDim(b []byte) (Dim, error) {
	var d Dim
	fs, err := fields(b)
	if err != nil {
		return d, err
	}
	for _, f := range fs {
		switch f.num {
		case fDimValue:
			if err := f.want(protowire.VarintType, "dim_value"); err != nil {
				return d, err
			}
			d.Value = int64(f.v)
		case fDimParam:
			if err := f.want(protowire.BytesType, "dim_param"); err != nil {
				return d, err
			}
			d.Param = string(f.b)
		}
	}
	return d, nil
}
