package load

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/plan-dev/plan/dataplane/workload"
)

// TestRedirectsNotFollowed: a server answering 307 to another address gets its redirect
// counted as the request's failure; the address it points to receives nothing.
func TestRedirectsNotFollowed(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	poisson, _ := workload.ParseArrival("poisson")
	o := OpenAIOptions{URL: redirector.URL, Model: "m", Seed: 1, Arrival: poisson, Rate: 100, MaxRequests: 3, InputTokens: 4, OutputTokens: 2}
	rep, _, err := RunOpenAI(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed != 3 {
		t.Fatalf("%d of 3 requests failed, want all: %+v", rep.Failed, rep.Failures)
	}
	if !strings.Contains(rep.Failures[0].Example, "redirect") {
		t.Errorf("failure %q does not say a redirect was refused", rep.Failures[0].Example)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the redirect target got %d requests, want 0", n)
	}
}
