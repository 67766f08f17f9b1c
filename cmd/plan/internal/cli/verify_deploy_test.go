package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/serve"
)

// uncheckedPlans are plans `plan check` fails whose every field validates: simulate and
// serve ran them (7 of testdata/ppipe/broken; a DyOrc deployment of a service no workflow
// has). want is what the refusal must say.
var uncheckedPlans = []struct{ file, want string }{
	{"testdata/ppipe/broken/latency-sum.json", "ppipe: verify: model m0 pipeline 0: latency-sum"},
	{"testdata/ppipe/broken/latency.json", "ppipe: verify: model m0 pipeline 0: latency: pipeline latency"},
	{"testdata/ppipe/broken/slo-budget.json", "ppipe: verify: model m0: slo-budget"},
	{"testdata/ppipe/broken/stage-latency.json", "ppipe: verify: model m0 pipeline 0 partition 0: stage-latency"},
	{"testdata/ppipe/broken/throughput-sum.json", "ppipe: verify: model m0: throughput-sum"},
	{"testdata/ppipe/broken/throughput.json", "ppipe: verify: model m0 pipeline 0 partition 0: throughput"},
	{"testdata/ppipe/broken/transfer.json", "ppipe: verify: model m0 pipeline 0 partition 0: transfer"},
	{"testdata/badinput/dyorc-unknown-service.json", `dyorc: verify: dyorc.deployments[6].service: "nosuch" is not a workflow service`},
}

// TestSimulateServeRefuseUncheckedPlans: simulate and serve start run the
// system's verifier before accepting a plan: exit 2 naming the file and the violation.
func TestSimulateServeRefuseUncheckedPlans(t *testing.T) {
	var cases []badInputCase
	for _, p := range uncheckedPlans {
		name := strings.TrimSuffix(filepath.Base(p.file), ".json")
		want := []string{p.file + ": " + p.want}
		cases = append(cases,
			badInputCase{name: "simulate " + name, args: []string{"simulate", p.file, "--load", "1", "--duration", "1s", "--report", "$TMP/rep"}, code: ExitUsage, want: want, out: "rep"},
			badInputCase{name: "serve " + name, args: []string{"serve", p.file, "--addr", "127.0.0.1:0"}, code: ExitUsage, want: []string{p.file, p.want}})
	}
	runBadInput(t, cases)
}

// TestServeReloadRefusesUncheckedPlan: PUT /v1/plan goes through the same
// deploy function: an unchecked plan is a 400 naming the violation, and the plan served
// stays the one before.
func TestServeReloadRefusesUncheckedPlan(t *testing.T) {
	p, err := formats.ReadInto[*formats.Plan](demoPlanPath, intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	s, err := serve.New(serve.Options{Plan: p, Deploy: systems.Deploy, Sections: systems.Default().Sections(), Policies: systems.Policies()})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	defer s.Shutdown(context.Background())
	before := s.ActiveDigest()
	for _, c := range uncheckedPlans {
		t.Run(filepath.Base(c.file), func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("..", "..", "..", "..", c.file))
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest(http.MethodPut, ts.URL+"/v1/plan", strings.NewReader(string(body)))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			msg, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(msg), strings.ReplaceAll(c.want, `"`, `\"`)) {
				t.Errorf("PUT: %d %s, want 400 naming %q", resp.StatusCode, msg, c.want)
			}
			if d := s.ActiveDigest(); d != before {
				t.Errorf("the served plan changed: digest %s, was %s", d, before)
			}
		})
	}
}
