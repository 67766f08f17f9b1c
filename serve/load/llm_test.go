package load

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	dq "github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/serve"
)

// TestExactLLMReplay: `plan load --trace` on an LLM plan sends each trace request once, in
// its class, with its tokens (kserve.TraceTokensHeader), and reports TTFT and tokens as `plan
// simulate` does; a trace the plan cannot replay is a setup error.
func TestExactLLMReplay(t *testing.T) {
	plan, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "..", "testdata", "export", "qlm", "plan.json"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	deploy := func(p *formats.Plan) (*dataplane.Deployment, string, error) {
		d, err := dq.FromPlan(p)
		return d, dq.PolicyQLM, err
	}
	s, err := serve.New(serve.Options{Plan: plan, Deploy: deploy, Policies: dq.Registry()})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	defer s.Shutdown(context.Background())
	req := func(us int64, target, class string, in, out int) formats.TraceRequest {
		return formats.TraceRequest{TimeUs: us, Target: target, Class: class, InputTokens: in, OutputTokens: out}
	}
	cases := []struct {
		name    string
		reqs    []formats.TraceRequest
		want    map[string]int64 // requests per class
		wantErr string
	}{
		{name: "by class, by model, by class field", reqs: []formats.TraceRequest{
			req(0, "mistral-chat", "", 40, 4), req(0, "mistral-7b", "", 30, 3), req(50000, "", "mistral-batch", 20, 2), req(100000, "mistral-7b", "", 10, 5)},
			want: map[string]int64{"mistral-chat": 2, "mistral-batch": 2}},
		{name: "tokens beyond the class", reqs: []formats.TraceRequest{req(0, "mistral-chat", "", 4000, 4)},
			wantErr: `t.json: requests[0].input_tokens: 4000: more than class "mistral-chat" allows`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := &formats.Trace{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindTrace}, Requests: c.reqs}
			spec, err := workload.TraceSpec("t.json", tr)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Run(context.Background(), Options{Deploy: deploy, URL: ts.URL, Sections: testSections, Load: 1, Duration: time.Second, Arrival: spec, Seed: 1})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var in, out int64
			for _, r := range c.reqs {
				in, out = in+int64(r.InputTokens), out+int64(r.OutputTokens)
			}
			p := res.Report.Points[0]
			if p.Total.Requests != int64(len(c.reqs)) || p.Total.Completed != int64(len(c.reqs)) {
				t.Fatalf("total %+v: want %d requests answered once", p.Total, len(c.reqs))
			}
			for _, a := range p.Apps {
				if a.Requests != c.want[a.Name] {
					t.Errorf("%s: %d requests, want %d", a.Name, a.Requests, c.want[a.Name])
				}
			}
			l := p.Total.LLM
			if l == nil || l.PromptTokens != in || l.OutputTokens != out || l.TTFT.MaxUs <= 0 || l.Unstamped != 0 {
				t.Fatalf("LLM metrics %+v: want %d prompt and %d output tokens, a TTFT per request", l, in, out)
			}
			// The server ran the trace's tokens (the header), not tokens it drew.
			resp, err := http.Get(ts.URL + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, want := range []string{`vllm:prompt_tokens_total{engine="0",model_name="mistral-chat"} 70`, `vllm:generation_tokens_total{engine="0",model_name="mistral-batch"} 7`} {
				if !strings.Contains(string(body), want+"\n") {
					t.Errorf("server metrics lack %s", want)
				}
			}
		})
	}
}
