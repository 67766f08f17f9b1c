package serve

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestModelVersionRoutes: HTTP follows the one version rule gRPC does (CheckModelVersion,
// KServe v2's versioned routes): /v2/models/{model}/versions/1/... answers as the unversioned route,
// any other version is 404 naming it, an unknown model under a version is 404 naming the
// model; the metadata lists version "1".
func TestModelVersionRoutes(t *testing.T) {
	_, ts := testServer(t, Options{Plan: loadPlan(t, "demo-plan.json")})
	for _, tc := range []struct {
		method, path string
		code         int
		body         string // a substring of the answer
	}{
		{"POST", "/v2/models/demo/versions/1/infer", 200, `"outputs"`},
		{"POST", "/v2/models/demo/versions/7/infer", 404, `no version \"7\"`},
		{"POST", "/v2/models/nope/versions/1/infer", 404, `model \"nope\" not found`},
		{"GET", "/v2/models/demo/versions/1", 200, `"versions":["1"]`},
		{"GET", "/v2/models/demo/versions/2", 404, `no version \"2\"`},
		{"GET", "/v2/models/demo", 200, `"versions":["1"]`},
		{"GET", "/v2/models/demo/versions/1/ready", 200, `"ready":true`},
		{"GET", "/v2/models/demo/versions/latest/ready", 404, `no version \"latest\"`},
	} {
		var code int
		var b []byte
		if tc.method == "POST" {
			code, _, b = post(t, ts.URL+tc.path, inferBody(1, 2))
		} else {
			code, b = get(t, ts.URL+tc.path)
		}
		if code != tc.code || !strings.Contains(string(b), tc.body) {
			t.Errorf("%s %s: %d %s; want %d with %s", tc.method, tc.path, code, b, tc.code, tc.body)
		}
		if code == 404 && !json.Valid(b) {
			t.Errorf("%s %s: 404 body is not JSON: %s", tc.method, tc.path, b)
		}
	}
}
