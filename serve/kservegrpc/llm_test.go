package kservegrpc

import (
	"context"
	"io"
	"net"
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
	"github.com/plan-dev/plan/serve/load"
)

// TestExactLLMReplayOverGRPC: `plan load --grpc --trace` on an LLM plan carries each
// request's tokens (metadata plan-trace-tokens) and reads the server's first_token_us, as the
// HTTP path does.
func TestExactLLMReplayOverGRPC(t *testing.T) {
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, New(s), ln) }()
	conn, err := Dial(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer func() {
		ts.Close()
		conn.Close()
		cancel()
		<-done
		_ = s.Shutdown(context.Background())
	}()
	tr := &formats.Trace{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindTrace}, Requests: []formats.TraceRequest{
		{Target: "mistral-chat", InputTokens: 40, OutputTokens: 4}, {TimeUs: 20000, Target: "mistral-chat", InputTokens: 30, OutputTokens: 6}}}
	spec, err := workload.TraceSpec("t.json", tr)
	if err != nil {
		t.Fatal(err)
	}
	res, err := load.Run(context.Background(), load.Options{URL: ts.URL, Deploy: deploy, Sections: testSections, Load: 1, Duration: time.Second, Arrival: spec, Seed: 1, Send: Sender(conn, false, false)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Samples) != 2 {
		t.Fatalf("%d requests sent, want 2", len(res.Samples))
	}
	for _, smp := range res.Samples {
		if smp.Status != 200 || smp.ServerFirstToken <= 0 {
			t.Fatalf("sample %+v: want 200 with the server's first token", smp)
		}
	}
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `vllm:prompt_tokens_total{engine="0",model_name="mistral-chat"} 70`; !strings.Contains(string(b), want+"\n") {
		t.Fatalf("server metrics lack %s: the tokens did not reach it", want)
	}
}
