package serve

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
)

// A server started without the registry's sections reads no plan: PUT /v1/plan is refused
// (500, the server's configuration is at fault) and the served plan stays, where it once
// fell back to the in-tree systems' sections and ran whatever rules those are.
func TestPutPlanWithoutSectionsRefused(t *testing.T) {
	p := loadPlan(t, "demo-plan.json")
	s, err := New(Options{Plan: p, Deploy: testDeploy, Policies: testPolicies})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		_ = s.Shutdown(context.Background())
		ts.Close()
	})
	old := s.ActiveDigest()
	b, _ := formats.Marshal(p)
	req, _ := http.NewRequest(http.MethodPut, ts.URL+"/v1/plan", bytes.NewReader(b))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(body), "serve.Options.Sections") {
		t.Errorf("PUT /v1/plan without sections: %d %s, want 500 naming serve.Options.Sections", resp.StatusCode, body)
	}
	if s.ActiveDigest() != old {
		t.Error("the served plan changed")
	}
}
