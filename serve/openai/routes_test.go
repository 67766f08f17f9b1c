package openai

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	dq "github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/serve"
)

// TestRouteDocsRegistered: every route RouteDocs lists for `plan serve --help` is a pattern
// Routes registers (GET /v1/engines only with --llm-endpoints, as its description says).
func TestRouteDocsRegistered(t *testing.T) {
	s, _ := qlmServerOpts(t, New(dq.Kind), serve.Options{})
	// Another kind: this front end opens no queue of its own on s's plan.
	fe := New("other")
	mux := http.NewServeMux()
	fe.Routes(s, mux)
	docs := fe.RouteDocs()
	if len(docs) != 9 {
		t.Fatalf("RouteDocs lists %d routes, want 9: %v", len(docs), docs)
	}
	for _, d := range docs {
		method, path, _ := strings.Cut(strings.NewReplacer("{id}", "x", "{id...}", "x/y").Replace(d.Pattern), " ")
		_, got := mux.Handler(httptest.NewRequest(method, path, http.NoBody))
		want := d.Pattern
		if strings.Contains(d.Doc, "with --llm-endpoints") {
			want = "/v1/" // not registered without endpoints: the catch-all's 404
		}
		if got != want {
			t.Errorf("%s (%s): registered as %q, want %q", d.Pattern, d.Doc, got, want)
		}
	}
}

// TestErrorObjects: every answer of the OpenAI API that is not a success is an OpenAI error
// object, {"error": {"message", "type", "param", "code"}}, all four keys present: unknown
// paths and wrong methods under /v1/ too (they answered {"error": "..."}).
func TestErrorObjects(t *testing.T) {
	_, url := qlmServer(t, memFrontend())
	for _, tc := range []struct {
		method, path, body string
		status             int
		allow              string
	}{
		{"GET", "/v1/nope", "", 404, ""},
		{"POST", "/v1/embeddings", `{"model":"mistral-chat","input":"x"}`, 404, ""},
		{"GET", "/v1/completions", "", 405, "POST"},
		{"DELETE", "/v1/models", "", 405, "GET"},
		{"GET", "/v1/models/nope", "", 404, ""},
		{"POST", "/v1/completions", `{"model":"nope","prompt":"x"}`, 404, ""},
		{"POST", "/v1/completions", `{"model":`, 400, ""},
	} {
		req, err := http.NewRequest(tc.method, url+tc.path, strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var obj struct {
			Error map[string]json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(b, &obj); err != nil || resp.StatusCode != tc.status {
			t.Errorf("%s %s: %d %s; want %d with an error object", tc.method, tc.path, resp.StatusCode, b, tc.status)
			continue
		}
		for _, k := range []string{"message", "type", "param", "code"} {
			if _, ok := obj.Error[k]; !ok {
				t.Errorf("%s %s: error object without %q: %s", tc.method, tc.path, k, b)
			}
		}
		var msg string
		if json.Unmarshal(obj.Error["message"], &msg) != nil || msg == "" {
			t.Errorf("%s %s: no message: %s", tc.method, tc.path, b)
		}
		if got := resp.Header.Get("Allow"); got != tc.allow {
			t.Errorf("%s %s: Allow %q, want %q", tc.method, tc.path, got, tc.allow)
		}
	}
}

// TestModels: GET /v1/models lists the plan's LLM classes with `created` the server's start,
// the same on every call; GET /v1/models/{id} answers one of them (created
// was 0 and the route was 404).
func TestModels(t *testing.T) {
	before := time.Now().Unix()
	_, url := qlmServer(t, memFrontend())
	var lists [2]struct {
		Object string  `json:"object"`
		Data   []Model `json:"data"`
	}
	for i := range lists {
		_, b := get(t, url+"/v1/models")
		if err := json.Unmarshal(b, &lists[i]); err != nil {
			t.Fatal(err)
		}
	}
	if len(lists[0].Data) == 0 || !reflect.DeepEqual(lists[0], lists[1]) {
		t.Fatalf("model lists %+v and %+v: want the same non-empty list on every call", lists[0], lists[1])
	}
	for _, m := range lists[0].Data {
		if m.Created < before || m.Created > time.Now().Unix() || m.Object != "model" {
			t.Errorf("model %+v: want object model, created the server's start (%d..now)", m, before)
		}
		resp, b := get(t, url+"/v1/models/"+m.ID)
		var one Model
		if resp.StatusCode != 200 || json.Unmarshal(b, &one) != nil || one != m {
			t.Errorf("GET /v1/models/%s: %d %s; want %+v", m.ID, resp.StatusCode, b, m)
		}
	}
}

func get(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}
