package serve

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/plan-dev/plan/serve/kserve"
)

// TestWorkerStateEndpoint: POST /v1/workers/state takes a worker out of service and back;
// bad bodies are 400 naming the field, an unknown worker 404. Readiness is false while no
// worker is up.
func TestWorkerStateEndpoint(t *testing.T) {
	s, ts := testServer(t, Options{Plan: loadPlan(t, "demo-plan.json")})
	name := s.Deployment().Topo.Workers[0].Name
	for _, tc := range []struct {
		body string
		code int
		want string
	}{
		{`{`, 400, "worker state"},
		{`{"down": true}`, 400, `field "worker" is required`},
		{`{"worker": "` + name + `"}`, 400, `field "down" is required`},
		{`{"worker": "` + name + `", "down": true, "extra": 1}`, 400, `unknown field "extra"`},
		{`{"worker": "nope", "down": true}`, 404, `unknown worker "nope": not in the plan; workers are ` + name},
		{`{"worker": "` + name + `", "down": true}`, 200, `"down":true`},
		{`{"worker": "` + name + `", "down": true}`, 200, `"down":true`}, // already down: no-op
		{`{"worker": "` + name + `", "down": false}`, 200, `"down":false`},
	} {
		resp, err := http.Post(ts.URL+"/v1/workers/state", "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		text := string(b)
		var e kserve.ErrorResponse
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			text = e.Error
		}
		if resp.StatusCode != tc.code || !strings.Contains(text, tc.want) {
			t.Errorf("%s → %d %s; want %d containing %s", tc.body, resp.StatusCode, b, tc.code, tc.want)
		}
	}
	workers := s.Deployment().Topo.Workers
	for i, w := range workers {
		for _, down := range []bool{true, false} {
			if !down && i < len(workers)-1 {
				continue // the last worker goes down and comes back; the others go down
			}
			resp, err := http.Post(ts.URL+"/v1/workers/state", "application/json", strings.NewReader(fmt.Sprintf(`{"worker": %q, "down": %v}`, w.Name, down)))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			want := 200
			if down && i == len(workers)-1 {
				want = 503 // every worker is down
			}
			if code, _ := get(t, ts.URL+"/v2/health/ready"); code != want {
				t.Errorf("worker %d of %d down=%v: readiness %d, want %d", i+1, len(workers), down, code, want)
			}
		}
	}
	for _, w := range workers {
		if err := s.SetWorkerDown(w.Name, false); err != nil {
			t.Fatal(err)
		}
	}
	// The server still answers once the workers are back.
	resp, err := http.Post(ts.URL+"/v2/models/demo/infer", "application/json", strings.NewReader(inferBody(1)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("inference after the worker came back: %d", resp.StatusCode)
	}
}
