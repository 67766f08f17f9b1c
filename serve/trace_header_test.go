package serve

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/plan-dev/plan/serve/kserve"
)

// TestTraceIndexHeaderBad: a malformed trace index is a 400 naming the header and the value,
// and nothing reaches the engine; a good one is served. The header is checked before the
// body is read, so a malformed body behind a malformed header gets the header's error.
func TestTraceIndexHeaderBad(t *testing.T) {
	_, ts := testServer(t, Options{Plan: loadPlan(t, "demo-plan.json")})
	for _, tc := range []struct {
		value string
		body  string
		code  int
		want  string
	}{
		{"12", inferBody(1), 200, ""},
		{"-3", inferBody(1), 400, `header Plan-Trace-Index: \"-3\"`},
		{"abc", inferBody(1), 400, `\"abc\": want a whole number`},
		{"abc", "{not json", 400, `\"abc\": want a whole number`},
	} {
		req, err := http.NewRequest(http.MethodPost, ts.URL+"/v2/models/demo/infer", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(kserve.TraceIndexHeader, tc.value)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s: %q → %d %s; want %d containing %s", kserve.TraceIndexHeader, tc.value, resp.StatusCode, b, tc.code, tc.want)
		}
	}
}
