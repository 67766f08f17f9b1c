package workflow

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/plan-dev/plan/serve"
)

// TestRouteDocsRegistered: the route RouteDocs lists for `plan serve --help` is the one
// Routes registers. Routes' handler reads the server only when called.
func TestRouteDocsRegistered(t *testing.T) {
	fe := New()
	mux := http.NewServeMux()
	fe.Routes(nil, mux)
	docs := fe.(serve.FrontendRoutes).RouteDocs()
	if len(docs) != 1 {
		t.Fatalf("RouteDocs: %v", docs)
	}
	for _, d := range docs {
		method, path, _ := strings.Cut(strings.ReplaceAll(d.Pattern, "{app}", "gill"), " ")
		if _, got := mux.Handler(httptest.NewRequest(method, path, http.NoBody)); got != d.Pattern {
			t.Errorf("%s: registered as %q", d.Pattern, got)
		}
	}
}
