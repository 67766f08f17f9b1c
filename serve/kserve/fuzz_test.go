package kserve

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"testing"
)

func FuzzDecodeInferRequest(f *testing.F) {
	for _, s := range []string{
		`{"inputs":[{"name":"input","shape":[1,3],"datatype":"FP32","data":[1,2,3]}]}`,
		`{"id":"a","inputs":[{"name":"input","shape":[1,2,2],"datatype":"FP32","data":[[1,2],[3,4]]}],"outputs":[{"name":"output"}]}`,
		`{"inputs":[{"name":"input","shape":[1,1],"datatype":"BOOL","data":[true]}]}`,
		`{"inputs":[]}`, `{`, `[]`, `{"inputs":[{"shape":[1,-5],"datatype":"FP32","data":[]}]}`,
		`{"inputs":[{"name":"input","shape":[1,99999999999],"datatype":"FP32","data":[1]}]}`,
	} {
		f.Add([]byte(s))
	}
	spec := TensorSpec{Name: "input", Datatype: "FP32", Shape: []int64{-1, -1}}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeInferRequest(body, spec)
		if err != nil {
			var bad *BadRequestError
			if !errors.As(err, &bad) {
				t.Fatalf("error %v is not a BadRequestError", err)
			}
			return
		}
		in := req.Inputs[0]
		if len(req.Inputs) != 1 || in.Datatype != "FP32" || len(in.Shape) != 2 || in.Shape[0] != 1 || in.Name != "input" {
			t.Fatalf("accepted %+v", req)
		}
		n, err := countElements(in.Data, in.Datatype)
		if err != nil || n != in.Shape[1] {
			t.Fatalf("accepted data with %d elements (%v) for shape %v", n, err, in.Shape)
		}
		if _, err := in.Float32s(); err != nil {
			t.Fatalf("accepted data that does not decode: %v", err)
		}
	})
}

// refCount is the straightforward element counter (encoding/json into interfaces) that the
// byte scanner replaced; the fuzz target below checks that both agree.
func refCount(raw []byte) (int64, bool) {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil || d.More() {
		return 0, false
	}
	var n int64
	ok := true
	var walk func(x any, depth int)
	walk = func(x any, depth int) {
		switch t := x.(type) {
		case []any:
			if depth > 32 {
				ok = false
			}
			for _, e := range t {
				walk(e, depth+1)
			}
		case json.Number:
			f, err := strconv.ParseFloat(string(t), 32)
			if err != nil || math.IsInf(f, 0) {
				ok = false
			}
			n++
		default:
			ok = false
		}
	}
	if _, isArr := v.([]any); !isArr {
		return 0, false
	}
	walk(v, 1)
	return n, ok
}

func FuzzCountElements(f *testing.F) {
	for _, s := range []string{"[1,2,3]", "[[1,2],[3,4]]", "[]", "[[]]", "[1,,2]", "[1 2]", "[-0.5e3, 2E-2]", "[01]", "[1.]", "[[1],2]", " [ 1 ] ", "[1]x", "[1e39]", "[true]", `["a"]`, "[[[[1]]]]", "[1,]", "[,1]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return // tensor data reaches the scanner as one valid JSON value (json.RawMessage)
		}
		got, err := countElements(raw, "FP32")
		want, ok := refCount(raw)
		if (err == nil) != ok || (ok && got != want) {
			t.Fatalf("%q: scanner %d, %v; reference %d, %v", raw, got, err, want, ok)
		}
		if err == nil {
			vals, err := (&TensorJSON{Data: raw}).Float32s()
			if err != nil || int64(len(vals)) != got {
				t.Fatalf("%q: counted %d, decoded %d (%v)", raw, got, len(vals), err)
			}
		}
	})
}
