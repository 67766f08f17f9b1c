package load

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFloorHandler checks the floor speaks the part of plan serve's API the load generator
// uses: the plan's bytes, a model's metadata, an infer answer after the model's latency,
// 404 for an unknown model; and refuses a plan without a ppipe section.
func TestFloorHandler(t *testing.T) {
	path := filepath.Join("..", "..", "testdata", "serve", "wide.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := FloorHandler(path, raw, testSections)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	defer ts.Close()
	cases := []struct {
		method, path string
		code         int
		want         string
	}{
		{"GET", "/v1/plan", 200, string(raw)},
		{"GET", "/v2/models/w", 200, `"name":"w"`},
		{"GET", "/v2/models/nope", 404, ""},
		{"POST", "/v2/models/w/infer", 200, `"model_name":"w"`},
		{"POST", "/v2/models/nope/infer", 404, ""},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(c.method, ts.URL+c.path, strings.NewReader(`{"inputs":[]}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code || !strings.Contains(string(body), c.want) {
			t.Errorf("%s %s: %d %q, want %d containing %q", c.method, c.path, resp.StatusCode, body, c.code, c.want)
		}
	}
	cascade, err := os.ReadFile(filepath.Join("..", "..", "testdata", "cascade", "golden-plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := FloorHandler("golden-plan.json", cascade, testSections); err == nil || !strings.Contains(err.Error(), "golden-plan.json") {
		t.Errorf("a cascade plan: err %v, want one naming the file", err)
	}
}
