package kserve

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"
	"testing"
)

// binBody is a body of Triton's binary tensor data extension: the JSON, then raw, and the
// BinaryHeader value that says where the JSON ends.
func binBody(js string, raw ...[]byte) ([]byte, string) {
	b := []byte(js)
	for _, r := range raw {
		b = append(b, r...)
	}
	return b, strconv.Itoa(len(js))
}

func leF32(vs ...float32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// TestDecodeInferBinary: a body of the binary tensor data extension (what tritonclient and
// perf_analyzer send by default) decodes to the same tensor as its JSON form; every size is
// checked against the body and the model, and each malformed body is a 400 naming the field.
func TestDecodeInferBinary(t *testing.T) {
	fp32 := TensorSpec{Name: "x", Datatype: "FP32", Shape: []int64{-1, 3}}
	i64 := TensorSpec{Name: "x", Datatype: "INT64", Shape: []int64{-1, 2}}
	boolean := TensorSpec{Name: "x", Datatype: "BOOL", Shape: []int64{-1, 3}}
	bytesSpec := TensorSpec{Name: "x", Datatype: "BYTES", Shape: []int64{-1, 1}}
	in := func(dtype, shape string, size int) string {
		return `{"name":"x","datatype":"` + dtype + `","shape":` + shape + `,"parameters":{"binary_data_size":` + strconv.Itoa(size) + `}}`
	}
	req := func(inputs ...string) string { return `{"id":"b1","inputs":[` + strings.Join(inputs, ",") + `]}` }
	fp16 := func(vs ...float32) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint16(b, F32ToF16(v))
		}
		return b
	}
	i64raw := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 7), uint64(math.MaxUint64)) // 7, -1
	cases := []struct {
		name   string
		spec   TensorSpec
		js     string
		raw    [][]byte
		header string // "" = the JSON's length
		data   string // want this data, or
		err    string // this error
	}{
		{"fp32", fp32, req(in("FP32", "[1,3]", 12)), [][]byte{leF32(1, 2.5, -3)}, "", "[1,2.5,-3]", ""},
		{"int64", i64, req(in("INT64", "[1,2]", 16)), [][]byte{i64raw}, "", "[7,-1]", ""},
		{"bool", boolean, req(in("BOOL", "[1,3]", 3)), [][]byte{{1, 0, 1}}, "", "[true,false,true]", ""},
		{"fp16 widened for an FP32 model", fp32, req(in("FP16", "[1,3]", 6)), [][]byte{fp16(0.5, 1, -2)}, "", "[0.5,1,-2]", ""},
		{"other parameters kept", fp32, `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,3],"parameters":{"binary_data_size":12,"k":1}}],"outputs":[{"name":"y","parameters":{"binary_data":true}}],"parameters":{"binary_data_output":true}}`, [][]byte{leF32(1, 2, 3)}, "", "[1,2,3]", ""},
		{"JSON data under the header", fp32, `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,3],"data":[1,2,3]}]}`, nil, "", "[1,2,3]", ""},

		{"no header", fp32, req(in("FP32", "[1,3]", 12)), nil, "-", "", "inputs[0].parameters.binary_data_size: the tensor's data is binary, but the request has no Inference-Header-Content-Length header"},
		{"header not a number", fp32, req(in("FP32", "[1,3]", 12)), [][]byte{leF32(1, 2, 3)}, "12x", "", `Inference-Header-Content-Length: "12x": must be the length in bytes of the JSON`},
		{"header past the body", fp32, req(in("FP32", "[1,3]", 12)), [][]byte{leF32(1, 2, 3)}, "100000", "", "Inference-Header-Content-Length: \"100000\""},
		{"header negative", fp32, req(in("FP32", "[1,3]", 12)), [][]byte{leF32(1, 2, 3)}, "-1", "", "Inference-Header-Content-Length: \"-1\""},
		{"header cuts the JSON", fp32, req(in("FP32", "[1,3]", 12)), [][]byte{leF32(1, 2, 3)}, "10", "", "malformed JSON"},
		{"size past the data", fp32, req(in("FP32", "[1,3]", 16)), [][]byte{leF32(1, 2, 3)}, "", "", "inputs[0].parameters.binary_data_size: 16 bytes, but 12 bytes of binary data follow"},
		{"size against the shape", fp32, req(in("FP32", "[1,3]", 8)), [][]byte{leF32(1, 2)}, "", "", "inputs[0].parameters.binary_data_size: 8 bytes: shape [1 3] of FP32 needs 12"},
		{"bytes unclaimed", fp32, req(in("FP32", "[1,3]", 12)), [][]byte{leF32(1, 2, 3, 4)}, "", "", "16 bytes of binary data follow the JSON, but the inputs' binary_data_size claim 12"},
		{"binary without a binary input", fp32, `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,3],"data":[1,2,3]}]}`, [][]byte{{0}}, "", "", "1 bytes of binary data follow the JSON, but the inputs' binary_data_size claim 0"},
		{"size not an integer", fp32, req(`{"name":"x","datatype":"FP32","shape":[1,3],"parameters":{"binary_data_size":1.5}}`), [][]byte{leF32(1, 2, 3)}, "", "", "inputs[0].parameters.binary_data_size: 1.5: must be a number of bytes"},
		{"size a string", fp32, req(`{"name":"x","datatype":"FP32","shape":[1,3],"parameters":{"binary_data_size":"12"}}`), [][]byte{leF32(1, 2, 3)}, "", "", `binary_data_size: "12": must be a number of bytes`},
		{"data and binary", fp32, req(`{"name":"x","datatype":"FP32","shape":[1,3],"data":[1,2,3],"parameters":{"binary_data_size":12}}`), [][]byte{leF32(1, 2, 3)}, "", "", "inputs[0]: both data and parameters.binary_data_size"},
		{"wrong datatype", fp32, req(in("INT32", "[1,3]", 12)), [][]byte{leF32(1, 2, 3)}, "", "", `inputs[0].datatype: "INT32": the model takes FP32`},
		{"wrong shape", fp32, req(in("FP32", "[1,4]", 16)), [][]byte{leF32(1, 2, 3, 4)}, "", "", "inputs[0].shape[1]: 4: the model takes [-1 3]"},
		{"NaN", fp32, req(in("FP32", "[1,3]", 12)), [][]byte{leF32(1, float32(math.NaN()), 3)}, "", "", "NaN: not a finite FP32 number"},
		{"BYTES", bytesSpec, req(in("BYTES", "[1,1]", 5)), [][]byte{{1, 0, 0, 0, 'a'}}, "", "", `inputs[0].datatype: "BYTES": no binary form here`},
		{"two binary inputs", fp32, req(in("FP32", "[1,3]", 12), in("FP32", "[1,3]", 12)), [][]byte{leF32(1, 2, 3), leF32(4, 5, 6)}, "", "", "inputs: 2 tensors: the model takes exactly one"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body, h := binBody(tc.js, tc.raw...)
			if tc.header != "" {
				h = tc.header
			}
			var r InferRequest
			var err error
			if h == "-" {
				r, err = DecodeInfer(body, tc.spec)
			} else {
				r, err = DecodeInferBinary(body, h, tc.spec)
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				if _, ok := err.(*BadRequestError); !ok {
					t.Errorf("error %T, want *BadRequestError (a 400)", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := r.Inputs[0]
			if string(got.Data) != tc.data || got.Datatype != tc.spec.Datatype {
				t.Errorf("data %s %s, want %s %s", got.Datatype, got.Data, tc.spec.Datatype, tc.data)
			}
			if _, ok := got.Parameters[binaryDataSize]; ok {
				t.Errorf("binary_data_size left in the tensor the engine carries: %v", got.Parameters)
			}
		})
	}
}

// FuzzDecodeInferBinary: whatever the header and the body, the binary decoder answers a
// request whose data matches its shape, or a 400; it never panics on a size.
func FuzzDecodeInferBinary(f *testing.F) {
	js := `{"inputs":[{"name":"input","shape":[1,2],"datatype":"FP32","parameters":{"binary_data_size":8}}]}`
	f.Add([]byte(js+"\x00\x00\x80?\x00\x00\x00@"), int64(len(js)))
	f.Add([]byte(js+"\x00\x00\x80?"), int64(len(js)))
	f.Add([]byte(js), int64(len(js)-3))
	f.Add([]byte(`{"inputs":[{"name":"input","shape":[1,1],"datatype":"FP16","parameters":{"binary_data_size":2}}]}`+"\x00<"), int64(96))
	spec := TensorSpec{Name: "input", Datatype: "FP32", Shape: []int64{-1, -1}}
	f.Fuzz(func(t *testing.T, body []byte, n int64) {
		req, err := DecodeInferBinary(body, strconv.FormatInt(n, 10), spec)
		if err != nil {
			if _, ok := err.(*BadRequestError); !ok {
				t.Fatalf("error %v is not a BadRequestError", err)
			}
			return
		}
		in := req.Inputs[0]
		got, err := countElements(in.Data, in.Datatype)
		if err != nil || len(in.Shape) != 2 || got != in.Shape[1] {
			t.Fatalf("accepted data %s (%v) for shape %v", in.Data, err, in.Shape)
		}
	})
}
