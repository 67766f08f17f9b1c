package kserve

import (
	"reflect"
	"strings"
	"testing"
)

// TestDecodeFast: which bodies the fast path takes (and then decodes exactly as encoding/json
// does) and which it leaves to the reference decoder.
func TestDecodeFast(t *testing.T) {
	deep := `{"inputs":[{"name":"input","shape":[1,1],"datatype":"FP32","data":` + strings.Repeat("[", 33) + "1" + strings.Repeat("]", 33) + `}]}`
	cases := []struct {
		name, body string
		fast       bool
	}{
		{"typical", `{"id":"r1","inputs":[{"name":"input","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]}`, true},
		{"whitespace", " {\n\t\"inputs\" : [ { \"data\" : [ [ 1 , 2 ] ] , \"datatype\" : \"FP32\" , \"shape\" : [ 1 , 2 ] , \"name\" : \"x\" } ] } \r\n", true},
		{"numbers", `{"inputs":[{"name":"i","shape":[-0,0,123456789012345678],"datatype":"FP64","data":[0,-0,1.5,-2e10,3E+2,4e-3,0.0]}]}`, true},
		{"empty data and shape", `{"inputs":[{"name":"i","shape":[],"datatype":"FP32","data":[]}]}`, true},
		{"partial tensor", `{"inputs":[{"data":[1]}]}`, true},
		{"two tensors", `{"inputs":[{"name":"a","data":[1]},{"name":"b","data":[[2]]}]}`, true},
		{"no inputs", `{"id":"x"}`, false},
		{"empty object", `{}`, false},
		{"escape in id", `{"id":"a\"b","inputs":[{"data":[1]}]}`, false},
		{"non-ASCII name", `{"inputs":[{"name":"é","data":[1]}]}`, false},
		{"null id", `{"id":null,"inputs":[{"data":[1]}]}`, false},
		{"duplicate id", `{"id":"a","id":"b","inputs":[{"data":[1]}]}`, false},
		{"duplicate data", `{"inputs":[{"data":[1],"data":[2]}]}`, false},
		{"parameters", `{"inputs":[{"data":[1]}],"parameters":{}}`, false},
		{"outputs", `{"inputs":[{"data":[1]}],"outputs":[{"name":"o"}]}`, false},
		{"key case", `{"Inputs":[{"data":[1]}]}`, false},
		{"bool data", `{"inputs":[{"datatype":"BOOL","data":[true]}]}`, false},
		{"string data", `{"inputs":[{"datatype":"BYTES","data":["a"]}]}`, false},
		{"trailing comma", `{"inputs":[{"data":[1,]}]}`, false},
		{"leading zero", `{"inputs":[{"data":[01]}]}`, false},
		{"bare dot", `{"inputs":[{"data":[1.]}]}`, false},
		{"plus sign", `{"inputs":[{"data":[+1]}]}`, false},
		{"float shape", `{"inputs":[{"shape":[1.0],"data":[1]}]}`, false},
		{"huge shape", `{"inputs":[{"shape":[1234567890123456789],"data":[1]}]}`, false},
		{"trailing data", `{"inputs":[{"data":[1]}]}x`, false},
		{"second object", `{"inputs":[{"data":[1]}]}{}`, false},
		{"unterminated", `{"inputs":[{"data":[1]`, false},
		{"too deep", deep, false},
		{"empty inputs", `{"inputs":[]}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := decodeInferFast([]byte(c.body), TensorSpec{})
			if ok != c.fast {
				t.Fatalf("fast path took it: %v, want %v", ok, c.fast)
			}
			if !ok {
				return
			}
			want, err := decodeInferJSON([]byte(c.body), false)
			if err != nil {
				t.Fatalf("fast path took a body the reference refuses: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("fast %+v\nreference %+v", got, want)
			}
		})
	}
}

// FuzzDecodeFast: whenever the fast path answers, encoding/json decodes the same request.
func FuzzDecodeFast(f *testing.F) {
	for _, s := range []string{
		`{"id":"r1","inputs":[{"name":"input","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]}`,
		`{"inputs":[{"name":"i","shape":[-0,0,12],"datatype":"FP64","data":[[0,-0],[1.5,-2e10],[3E+2,4e-3]]}]}`,
		`{"inputs":[{"data":[1,]}]}`, `{"inputs":[{"data":[01]}]}`, `{"id":"a\u0041","inputs":[{"data":[1]}]}`,
		`{"inputs":[{"data":[1]}]}}`, `{"inputs":[{"data":[1]}]} ]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := decodeInferFast(body, TensorSpec{})
		if !ok {
			return
		}
		want, err := decodeInferJSON(body, false)
		if err != nil {
			t.Fatalf("fast path took a body the reference refuses (%v)", err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("fast %+v\nreference %+v", got, want)
		}
	})
}
