package serve

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// routePath is a request path matching pattern: each {name} wildcard becomes "x".
func routePath(pattern string) (method, path string) {
	method, path, _ = strings.Cut(pattern, " ")
	var b strings.Builder
	for {
		i := strings.IndexByte(path, '{')
		if i < 0 {
			b.WriteString(path)
			return method, b.String()
		}
		j := strings.IndexByte(path[i:], '}')
		b.WriteString(path[:i] + "x")
		path = path[i+j+1:]
	}
}

// TestCoreRoutesRegistered: every route CoreRoutes documents (`plan serve --help`) is the
// pattern a running server's mux answers it with.
func TestCoreRoutesRegistered(t *testing.T) {
	s, _ := testServer(t, Options{Plan: loadPlan(t, "demo-plan.json")})
	docs := CoreRoutes()
	if len(docs) < 10 {
		t.Fatalf("CoreRoutes lists %d routes", len(docs))
	}
	for _, d := range docs {
		method, path := routePath(d.Pattern)
		if _, got := s.mux.Handler(httptest.NewRequest(method, path, http.NoBody)); got != d.Pattern {
			t.Errorf("%s: the server answers %s %s with %q", d.Pattern, method, path, got)
		}
		if d.Doc == "" {
			t.Errorf("%s: no description", d.Pattern)
		}
	}
}
