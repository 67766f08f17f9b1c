package openai

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	dq "github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/serve"
)

// TestRouteDocsRegistered: every route RouteDocs lists for `plan serve --help` is a pattern
// Routes registers (GET /v1/engines only with --llm-endpoints, as its description says)
// (issue 37 item 6).
func TestRouteDocsRegistered(t *testing.T) {
	s, _ := qlmServerOpts(t, New(dq.Kind), serve.Options{})
	// Another kind: this front end opens no queue of its own on s's plan.
	fe := New("other")
	mux := http.NewServeMux()
	fe.Routes(s, mux)
	docs := fe.RouteDocs()
	if len(docs) != 6 {
		t.Fatalf("RouteDocs lists %d routes, want 6: %v", len(docs), docs)
	}
	for _, d := range docs {
		method, path, _ := strings.Cut(strings.ReplaceAll(d.Pattern, "{id}", "x"), " ")
		_, got := mux.Handler(httptest.NewRequest(method, path, http.NoBody))
		want := d.Pattern
		if strings.Contains(d.Doc, "with --llm-endpoints") {
			want = "" // not registered without endpoints
		}
		if got != want {
			t.Errorf("%s (%s): registered as %q, want %q", d.Pattern, d.Doc, got, want)
		}
	}
}
