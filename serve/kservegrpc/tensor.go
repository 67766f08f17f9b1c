package kservegrpc

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/plan-dev/plan/serve/kserve"
	pb "github.com/plan-dev/plan/serve/kservegrpc/inferencepb"
)

// typedField names the InferTensorContents field that holds a datatype's elements.
var typedField = map[string]string{
	"BOOL": "bool_contents", "INT8": "int_contents", "INT16": "int_contents", "INT32": "int_contents",
	"INT64": "int64_contents", "UINT8": "uint_contents", "UINT16": "uint_contents", "UINT32": "uint_contents",
	"UINT64": "uint64_contents", "FP32": "fp32_contents", "FP64": "fp64_contents", "BYTES": "bytes_contents",
}

// setFields lists the contents fields that hold elements, with their counts.
func setFields(c *pb.InferTensorContents) map[string]int {
	out := map[string]int{}
	add := func(name string, n int) {
		if n > 0 {
			out[name] = n
		}
	}
	add("bool_contents", len(c.GetBoolContents()))
	add("int_contents", len(c.GetIntContents()))
	add("int64_contents", len(c.GetInt64Contents()))
	add("uint_contents", len(c.GetUintContents()))
	add("uint64_contents", len(c.GetUint64Contents()))
	add("fp32_contents", len(c.GetFp32Contents()))
	add("fp64_contents", len(c.GetFp64Contents()))
	add("bytes_contents", len(c.GetBytesContents()))
	return out
}

// elements is the product of shape (−1 for a negative dimension or an overflow).
func elements(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		if d < 0 || (d > 0 && n > math.MaxInt32/d) {
			return -1
		}
		n *= d
	}
	return n
}

// inputJSON turns a gRPC input tensor (typed contents, or raw when raw != nil) into the JSON
// array the engine carries; an FP16 tensor (raw only) is widened to want when the model
// takes FP32. Errors name the tensor (INVALID_ARGUMENT).
func inputJSON(t *pb.ModelInferRequest_InferInputTensor, raw []byte, isRaw bool, want string) (data []byte, dtype string, err error) {
	name := fmt.Sprintf("input %q", t.GetName())
	n := elements(t.GetShape())
	if n < 0 {
		return nil, "", fmt.Errorf("%s: shape %v: dimensions must be >= 0 and the tensor at most 2^31 elements", name, t.GetShape())
	}
	dtype = t.GetDatatype()
	set := setFields(t.GetContents())
	if isRaw {
		if len(set) > 0 {
			return nil, "", fmt.Errorf("%s: contents set (%s) while the request carries raw_input_contents: use one or the other for all inputs", name, keys(set))
		}
		size, ok := kserve.RawElemSize(dtype)
		if !ok {
			return nil, "", fmt.Errorf("%s: datatype %q has no raw form here (want one of %s)", name, dtype, kserve.RawDatatypes)
		}
		if int64(len(raw)) != n*int64(size) {
			return nil, "", fmt.Errorf("%s: raw_input_contents holds %d bytes: shape %v of %s needs %d", name, len(raw), t.GetShape(), dtype, n*int64(size))
		}
		if dtype == "FP16" && want == "FP32" {
			dtype = "FP32" // widened exactly; the answer goes back as FP16 raw
		}
		return kserve.RawJSON(raw, t.GetDatatype(), n), dtype, nil
	}
	field, ok := typedField[dtype]
	if !ok {
		if dtype == "FP16" || dtype == "BF16" {
			return nil, "", fmt.Errorf("%s: %s has no typed contents field: send it in raw_input_contents", name, dtype)
		}
		return nil, "", fmt.Errorf("%s: unknown datatype %q", name, dtype)
	}
	for f := range set {
		if f != field {
			return nil, "", fmt.Errorf("%s: datatype %s reads contents.%s, but the request set contents.%s", name, dtype, field, f)
		}
	}
	if got := int64(set[field]); got != n {
		return nil, "", fmt.Errorf("%s: contents.%s holds %d elements: shape %v needs %d", name, field, got, t.GetShape(), n)
	}
	return typedJSON(t.GetContents(), dtype, n), dtype, nil
}

func keys(m map[string]int) string {
	s := ""
	for _, f := range []string{"bool_contents", "int_contents", "int64_contents", "uint_contents", "uint64_contents", "fp32_contents", "fp64_contents", "bytes_contents"} {
		if m[f] > 0 {
			if s != "" {
				s += ", "
			}
			s += "contents." + f
		}
	}
	return s
}

// appendF32 and appendF64 write an input element (kserve.AppendInputFloat: a NaN or an
// infinity is refused later, as the HTTP API refuses it).
func appendF32(b []byte, f float32) []byte { return kserve.AppendInputFloat(b, float64(f), 32) }

func appendF64(b []byte, f float64) []byte { return kserve.AppendInputFloat(b, f, 64) }

// typedJSON writes n typed elements as a flat JSON array.
func typedJSON(c *pb.InferTensorContents, dtype string, n int64) []byte {
	b := make([]byte, 0, 2+n*8)
	b = append(b, '[')
	for i := int64(0); i < n; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		switch dtype {
		case "BOOL":
			b = strconv.AppendBool(b, c.BoolContents[i])
		case "INT8", "INT16", "INT32":
			b = strconv.AppendInt(b, int64(c.IntContents[i]), 10)
		case "INT64":
			b = strconv.AppendInt(b, c.Int64Contents[i], 10)
		case "UINT8", "UINT16", "UINT32":
			b = strconv.AppendUint(b, uint64(c.UintContents[i]), 10)
		case "UINT64":
			b = strconv.AppendUint(b, c.Uint64Contents[i], 10)
		case "FP32":
			b = appendF32(b, c.Fp32Contents[i])
		case "FP64":
			b = appendF64(b, c.Fp64Contents[i])
		}
	}
	return append(b, ']')
}

// scanNumbers calls f with every scalar token of a JSON array (nested arrays flattened).
func scanNumbers(data []byte, f func(tok []byte) error) error {
	i := 0
	for i < len(data) {
		c := data[i]
		switch c {
		case '[', ']', ',', ' ', '\n', '\t', '\r':
			i++
			continue
		}
		j := i
		for j < len(data) {
			c := data[j]
			if c == ',' || c == ']' || c == ' ' || c == '\n' || c == '\t' || c == '\r' {
				break
			}
			j++
		}
		if err := f(data[i:j]); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// outputTensor encodes the engine's output (a JSON array) as typed contents, or as raw bytes
// (asRaw) — FP16 raw when half is set and the output is FP32 (the request sent FP16).
func outputTensor(out kserve.TensorJSON, asRaw, half bool) (*pb.ModelInferResponse_InferOutputTensor, []byte, error) {
	t := &pb.ModelInferResponse_InferOutputTensor{Name: out.Name, Datatype: out.Datatype}
	dtype := out.Datatype
	if half && dtype == "FP32" {
		t.Datatype = "FP16"
	}
	var (
		raw []byte
		c   pb.InferTensorContents
		n   int64
	)
	le := binary.LittleEndian
	err := scanNumbers(out.Data, func(tok []byte) error {
		n++
		s := string(tok)
		switch dtype {
		case "BOOL":
			v := s == "true" || s == "1"
			if asRaw {
				x := byte(0)
				if v {
					x = 1
				}
				raw = append(raw, x)
			} else {
				c.BoolContents = append(c.BoolContents, v)
			}
			return nil
		case "FP32", "FP16", "BF16":
			f, err := strconv.ParseFloat(s, 32)
			if err != nil {
				return err
			}
			switch {
			case !asRaw:
				c.Fp32Contents = append(c.Fp32Contents, float32(f))
				t.Datatype = "FP32" // FP16 has no typed field
			case t.Datatype == "FP16":
				raw = le.AppendUint16(raw, kserve.F32ToF16(float32(f)))
			case t.Datatype == "BF16":
				raw = le.AppendUint16(raw, uint16(math.Float32bits(float32(f))>>16))
			default:
				raw = le.AppendUint32(raw, math.Float32bits(float32(f)))
			}
			return nil
		case "FP64":
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return err
			}
			if asRaw {
				raw = le.AppendUint64(raw, math.Float64bits(f))
			} else {
				c.Fp64Contents = append(c.Fp64Contents, f)
			}
			return nil
		case "INT8", "INT16", "INT32", "INT64":
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return err
			}
			switch {
			case !asRaw && dtype == "INT64":
				c.Int64Contents = append(c.Int64Contents, v)
			case !asRaw:
				c.IntContents = append(c.IntContents, int32(v))
			case dtype == "INT8":
				raw = append(raw, byte(int8(v)))
			case dtype == "INT16":
				raw = le.AppendUint16(raw, uint16(int16(v)))
			case dtype == "INT32":
				raw = le.AppendUint32(raw, uint32(int32(v)))
			default:
				raw = le.AppendUint64(raw, uint64(v))
			}
			return nil
		case "UINT8", "UINT16", "UINT32", "UINT64":
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return err
			}
			switch {
			case !asRaw && dtype == "UINT64":
				c.Uint64Contents = append(c.Uint64Contents, v)
			case !asRaw:
				c.UintContents = append(c.UintContents, uint32(v))
			case dtype == "UINT8":
				raw = append(raw, byte(v))
			case dtype == "UINT16":
				raw = le.AppendUint16(raw, uint16(v))
			case dtype == "UINT32":
				raw = le.AppendUint32(raw, uint32(v))
			default:
				raw = le.AppendUint64(raw, v)
			}
			return nil
		}
		return fmt.Errorf("output datatype %q: not encodable", dtype)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("output %q: %w", out.Name, err)
	}
	t.Shape = out.Shape
	if elements(t.Shape) != n {
		t.Shape = []int64{1, n}
	}
	if asRaw {
		if raw == nil {
			raw = []byte{}
		}
		return t, raw, nil
	}
	t.Contents = &c
	return t, nil, nil
}

func durationUs(us int64) time.Duration { return time.Duration(us) * time.Microsecond }
