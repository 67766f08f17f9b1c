package serve

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/plan-dev/plan/serve/kserve"
)

// TestInferBinaryHTTP: KServe v2 over HTTP takes Triton's binary tensor data extension, as
// tritonclient and perf_analyzer send it by default (the JSON's length in
// Inference-Header-Content-Length, then each binary input's bytes): the answer is the one
// the JSON form gets. A body the extension cannot read is a 400 naming what is wrong.
func TestInferBinaryHTTP(t *testing.T) {
	_, ts := testServer(t, Options{Plan: roomyPlan(t)})
	url := ts.URL + "/v2/models/demo/infer"
	raw := func(vs ...float32) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
		return b
	}
	const js = `{"id":"r1","inputs":[{"name":"input","shape":[1,3],"datatype":"FP32","parameters":{"binary_data_size":12}}],"outputs":[{"name":"output","parameters":{"binary_data":true}}]}`
	jsLen := strconv.Itoa(len(js))
	for _, tc := range []struct {
		name    string
		body    []byte
		headers []string // BinaryHeader values
		code    int
		want    string // in the body
	}{
		{"binary input", append([]byte(js), raw(1, 2.5, -3)...), []string{jsLen}, 200, `"data":[1,2.5,-3]`},
		{"JSON data with the header", []byte(inferBody(1, 2)), []string{strconv.Itoa(len(inferBody(1, 2)))}, 200, `"data":[1,2]`},
		{"no header", append([]byte(js), raw(1, 2.5, -3)...), nil, 400, "binary tensor data after the JSON needs the Inference-Header-Content-Length header"},
		{"header past the body", append([]byte(js), raw(1, 2.5, -3)...), []string{"9999"}, 400, `Inference-Header-Content-Length: \"9999\"`},
		{"header twice", append([]byte(js), raw(1, 2.5, -3)...), []string{jsLen, jsLen}, 400, "Inference-Header-Content-Length: given 2 times"},
		{"short binary data", append([]byte(js), raw(1, 2.5)...), []string{jsLen}, 400, "binary_data_size: 12 bytes, but 8 bytes of binary data follow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("POST", url, bytes.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/octet-stream")
			for _, h := range tc.headers {
				req.Header.Add(kserve.BinaryHeader, h)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code || !strings.Contains(string(b), tc.want) {
				t.Fatalf("got %d %s, want %d containing %s", resp.StatusCode, b, tc.code, tc.want)
			}
		})
	}
	// The server metadata lists the extension, as Triton's does.
	code, b := get(t, ts.URL+"/v2")
	var md struct{ Extensions []string }
	if err := json.Unmarshal(b, &md); code != 200 || err != nil || len(md.Extensions) != 1 || md.Extensions[0] != kserve.BinaryExtension {
		t.Errorf("GET /v2: %d %s, want the extensions to list %s", code, b, kserve.BinaryExtension)
	}
}
