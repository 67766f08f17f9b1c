package kserve

import (
	"encoding/json"
	"math"
	"strconv"
)

// Triton's binary tensor data extension for HTTP: the body is a JSON request of
// BinaryHeader bytes followed by raw tensor data, and each input whose data is binary says
// how many of those bytes are its own with parameters.binary_data_size, in the order of
// inputs (raw.go has the element layout). Triton's and KServe's clients (tritonclient,
// perf_analyzer) send inputs this way by default. The answer stays JSON: a client that asked
// for binary outputs (binary_data) reads an output without binary_data_size from its data.

// BinaryHeader is the HTTP header that gives the length of the JSON part of a binary body.
const BinaryHeader = "Inference-Header-Content-Length"

// BinaryExtension is the extension's name in the server metadata's extensions.
const BinaryExtension = "binary_tensor_data"

const binaryDataSize = "binary_data_size"

// DecodeInferBinary is DecodeInfer for a body sent with the binary tensor data extension:
// header is BinaryHeader's value. The JSON part and every binary_data_size are bounded by
// the body, which the server's body limit bounds; a binary input's shape is checked against
// the model before its bytes become elements.
func DecodeInferBinary(body []byte, header string, spec TensorSpec) (InferRequest, error) {
	n, err := strconv.ParseInt(header, 10, 64)
	if err != nil || n < 0 || n > int64(len(body)) {
		return InferRequest{}, badf("%s: %q: must be the length in bytes of the JSON at the start of the body (0 to %d)", BinaryHeader, Clip([]byte(header)), len(body))
	}
	return decodeInfer(body[:n:n], body[n:], true, spec)
}

// binaryInputs takes each binary input's bytes from bin, in order (raws[i]: input i's; nil
// when no input is binary), and drops its binary_data_size: the tensor the engine carries is
// JSON. Every byte of bin must belong to an input. Without the extension's header (binary
// false), a binary input is refused naming the header.
func binaryInputs(ins []TensorJSON, bin []byte, binary bool) (raws [][]byte, err error) {
	off := 0
	for i := range ins {
		in := &ins[i]
		v, ok := in.Parameters[binaryDataSize]
		if !ok {
			continue
		}
		if !binary {
			return nil, badf("inputs[%d].parameters.binary_data_size: the tensor's data is binary, but the request has no %s header (the length of the JSON before the binary data: Triton's binary tensor data extension)", i, BinaryHeader)
		}
		if in.Data != nil {
			return nil, badf("inputs[%d]: both data and parameters.binary_data_size: a tensor's data is JSON or binary, not both", i)
		}
		f, isNum := v.(float64)
		if !isNum || f < 0 || f != math.Trunc(f) {
			b, _ := json.Marshal(v)
			return nil, badf("inputs[%d].parameters.binary_data_size: %s: must be a number of bytes (an integer >= 0)", i, Clip(b))
		}
		if left := len(bin) - off; f > float64(left) {
			return nil, badf("inputs[%d].parameters.binary_data_size: %.0f bytes, but %d bytes of binary data follow the JSON after the inputs before it", i, f, left)
		}
		k := int(f)
		if raws == nil {
			raws = make([][]byte, len(ins))
		}
		raws[i] = bin[off : off+k : off+k]
		if raws[i] == nil {
			raws[i] = []byte{} // binary, and empty: refused by its shape, never taken for JSON
		}
		off += k
		delete(in.Parameters, binaryDataSize)
		if len(in.Parameters) == 0 {
			in.Parameters = nil
		}
	}
	if off != len(bin) {
		return nil, badf("%s: %d bytes of binary data follow the JSON, but the inputs' binary_data_size claim %d", BinaryHeader, len(bin), off)
	}
	return raws, nil
}

// fromBinary turns input in's raw bytes into its JSON data, after checking its name,
// datatype and shape against spec. FP16, which JSON has no form for, is widened exactly to
// FP32 for a model that takes FP32 (as the gRPC front end widens raw FP16).
func fromBinary(in *TensorJSON, raw []byte, spec TensorSpec) error {
	wire := in.Datatype
	if wire == "FP16" && spec.Datatype == "FP32" {
		in.Datatype = "FP32"
	}
	n, err := checkInputSpec(in, spec)
	if err != nil {
		return err
	}
	size, ok := RawElemSize(wire)
	if !ok {
		return badf("inputs[0].datatype: %q: no binary form here (want one of %s)", wire, RawDatatypes)
	}
	if want := n * int64(size); int64(len(raw)) != want {
		return badf("inputs[0].parameters.binary_data_size: %d bytes: shape %v of %s needs %d", len(raw), in.Shape, wire, want)
	}
	in.Data = RawJSON(raw, wire, n)
	return nil
}
