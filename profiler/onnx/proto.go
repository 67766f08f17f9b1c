package onnx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of onnx.proto (ONNX IR, proto2 syntax). Only the fields the profiler reads or
// writes are listed; every other field is skipped on read.
const (
	// ModelProto
	fModelIRVersion    = 1
	fModelProducerName = 2
	fModelGraph        = 7
	fModelOpsetImport  = 8

	// OperatorSetIdProto
	fOpsetDomain  = 1
	fOpsetVersion = 2

	// GraphProto
	fGraphNode        = 1
	fGraphName        = 2
	fGraphInitializer = 5
	fGraphInput       = 11
	fGraphOutput      = 12
	fGraphValueInfo   = 13

	// NodeProto
	fNodeInput     = 1
	fNodeOutput    = 2
	fNodeName      = 3
	fNodeOpType    = 4
	fNodeAttribute = 5
	fNodeDomain    = 7

	// AttributeProto
	fAttrName    = 1
	fAttrF       = 2
	fAttrI       = 3
	fAttrS       = 4
	fAttrT       = 5
	fAttrFloats  = 7
	fAttrInts    = 8
	fAttrStrings = 9
	fAttrType    = 20

	// TensorProto
	fTensorDims         = 1
	fTensorDataType     = 2
	fTensorFloatData    = 4
	fTensorInt32Data    = 5
	fTensorInt64Data    = 7
	fTensorName         = 8
	fTensorRawData      = 9
	fTensorDoubleData   = 10
	fTensorDataLocation = 14

	// ValueInfoProto, TypeProto, TypeProto.Tensor, TensorShapeProto, Dimension
	fValueInfoName   = 1
	fValueInfoType   = 2
	fTypeTensor      = 1
	fTensorTypeElem  = 1
	fTensorTypeShape = 2
	fShapeDim        = 1
	fDimValue        = 1
	fDimParam        = 2
)

// errNotONNX wraps every wire-level failure so callers see one clear cause.
var errNotONNX = errors.New("not an ONNX model")

// field is one decoded protobuf field: its number, wire type and payload. For varint and fixed
// fields v holds the value; for length-delimited fields b holds the bytes (a sub-slice of the
// input, never a copy, so big initializers cost nothing to skip).
type field struct {
	num protowire.Number
	typ protowire.Type
	v   uint64
	b   []byte
}

// fields splits one message into its fields. Groups (deprecated) are rejected: ONNX never
// uses them, so one is a sign of a file that is not ONNX.
func fields(msg []byte) ([]field, error) {
	var out []field
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return nil, fmt.Errorf("bad field tag: %w", protowire.ParseError(n))
		}
		msg = msg[n:]
		f := field{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			f.v, n = protowire.ConsumeVarint(msg)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(msg)
			f.v = uint64(v)
		case protowire.Fixed64Type:
			f.v, n = protowire.ConsumeFixed64(msg)
		case protowire.BytesType:
			f.b, n = protowire.ConsumeBytes(msg)
		default:
			return nil, fmt.Errorf("field %d: unsupported wire type %d", num, typ)
		}
		if n < 0 {
			return nil, fmt.Errorf("field %d: %w", num, protowire.ParseError(n))
		}
		msg = msg[n:]
		out = append(out, f)
	}
	return out, nil
}

// want checks a field's wire type.
func (f field) want(t protowire.Type, what string) error {
	if f.typ != t {
		return fmt.Errorf("%s (field %d): wire type %d, want %d", what, f.num, f.typ, t)
	}
	return nil
}

// ints appends the int64 values of a repeated integer field, packed or not (proto2 writers
// differ; a reader must accept both).
func (f field) ints(dst []int64, what string) ([]int64, error) {
	switch f.typ {
	case protowire.VarintType:
		return append(dst, int64(f.v)), nil
	case protowire.BytesType:
		b := f.b
		for len(b) > 0 {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return nil, fmt.Errorf("%s: packed varint: %w", what, protowire.ParseError(n))
			}
			dst = append(dst, int64(v))
			b = b[n:]
		}
		return dst, nil
	}
	return nil, fmt.Errorf("%s (field %d): wire type %d is not an integer", what, f.num, f.typ)
}

// floats appends the float32 values of a repeated float field, packed or not.
func (f field) floats(dst []float32, what string) ([]float32, error) {
	switch f.typ {
	case protowire.Fixed32Type:
		return append(dst, math.Float32frombits(uint32(f.v))), nil
	case protowire.BytesType:
		if len(f.b)%4 != 0 {
			return nil, fmt.Errorf("%s: packed floats: length %d is not a multiple of 4", what, len(f.b))
		}
		for i := 0; i < len(f.b); i += 4 {
			dst = append(dst, math.Float32frombits(binary.LittleEndian.Uint32(f.b[i:])))
		}
		return dst, nil
	}
	return nil, fmt.Errorf("%s (field %d): wire type %d is not a float", what, f.num, f.typ)
}

// The writer side: a tiny append-only encoder over protowire.

func putVarint(b []byte, num protowire.Number, v int64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(v))
}

func putBytes(b []byte, num protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func putString(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}
