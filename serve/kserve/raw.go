package kserve

import (
	"encoding/binary"
	"math"
	"strconv"
)

// A tensor's raw form, shared by the gRPC front end's raw_input_contents and the HTTP binary
// tensor data extension: row-major, little-endian, no padding, each element in its datatype's
// native size, BOOL one byte (ecosystem digest §1; Triton's binary tensor data extension).

// rawElemSize is the raw size of one element of each fixed-size datatype. BYTES, whose
// elements carry their own lengths, has none here: the models plan serves take numbers.
var rawElemSize = map[string]int{
	"BOOL": 1, "UINT8": 1, "UINT16": 2, "UINT32": 4, "UINT64": 8, "INT8": 1, "INT16": 2,
	"INT32": 4, "INT64": 8, "FP16": 2, "FP32": 4, "FP64": 8, "BF16": 2,
}

// RawDatatypes lists the datatypes that have a raw form, for error messages.
const RawDatatypes = "BOOL, INT8..INT64, UINT8..UINT64, FP16, BF16, FP32, FP64"

// RawElemSize is the raw size in bytes of one element of dtype (false: no raw form).
func RawElemSize(dtype string) (int, bool) {
	n, ok := rawElemSize[dtype]
	return n, ok
}

// AppendInputFloat writes an input element of the given precision (32 or 64 bits). A NaN or
// an infinity is written as Go spells it (NaN, +Inf, -Inf): not JSON, so CheckInput refuses
// the request as the JSON API refuses the same tensor, rather than the model seeing zeros.
func AppendInputFloat(b []byte, f float64, bits int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.AppendFloat(b, f, 'g', -1, 64) // NaN, +Inf, -Inf
	}
	return strconv.AppendFloat(b, f, 'g', -1, bits)
}

// RawJSON decodes n raw elements of dtype (len(raw) ≥ n × RawElemSize(dtype)) as the flat
// JSON array the engine carries.
func RawJSON(raw []byte, dtype string, n int64) []byte {
	b := make([]byte, 0, 2+n*8)
	b = append(b, '[')
	le := binary.LittleEndian
	f32 := func(b []byte, f float32) []byte { return AppendInputFloat(b, float64(f), 32) }
	for i := int64(0); i < n; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		switch dtype {
		case "BOOL":
			b = strconv.AppendBool(b, raw[i] != 0)
		case "INT8":
			b = strconv.AppendInt(b, int64(int8(raw[i])), 10)
		case "UINT8":
			b = strconv.AppendUint(b, uint64(raw[i]), 10)
		case "INT16":
			b = strconv.AppendInt(b, int64(int16(le.Uint16(raw[2*i:]))), 10)
		case "UINT16":
			b = strconv.AppendUint(b, uint64(le.Uint16(raw[2*i:])), 10)
		case "INT32":
			b = strconv.AppendInt(b, int64(int32(le.Uint32(raw[4*i:]))), 10)
		case "UINT32":
			b = strconv.AppendUint(b, uint64(le.Uint32(raw[4*i:])), 10)
		case "INT64":
			b = strconv.AppendInt(b, int64(le.Uint64(raw[8*i:])), 10)
		case "UINT64":
			b = strconv.AppendUint(b, le.Uint64(raw[8*i:]), 10)
		case "FP16":
			b = f32(b, F16ToF32(le.Uint16(raw[2*i:])))
		case "BF16":
			b = f32(b, math.Float32frombits(uint32(le.Uint16(raw[2*i:]))<<16))
		case "FP32":
			b = f32(b, math.Float32frombits(le.Uint32(raw[4*i:])))
		case "FP64":
			b = AppendInputFloat(b, math.Float64frombits(le.Uint64(raw[8*i:])), 64)
		}
	}
	return append(b, ']')
}
