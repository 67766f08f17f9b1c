package serve

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	dq "github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/sim"
)

// TestQLMPreemptionsInMetrics: QLM's policies count their preemptions (serve.Preempter), so
// vllm:num_preemptions_total moves when their engine preempts (as vLLM's does). Three
// 16-token prompts on a 64-token KV cache: the youngest is preempted once (the engine digest's
// hand-computed case, dataplane/qlm TestEngineRules).
func TestQLMPreemptionsInMetrics(t *testing.T) {
	prof := formats.LLMProfile{Model: "m", GPU: "A100", GPUCount: 1, Backend: "import", ParamsB: 7, WeightBytes: 14e9,
		PrefillBaseUs: 1000, PrefillUsPerToken: 10, DecodeUsPerToken: 6000, ThroughputTokensPerS: 5000,
		KVBytesPerToken: 131072, KVCapacityTokens: 64, AvgBatch: 32, Epsilon: 1, LoadColdUs: 5e6, LoadWarmUs: 1e6,
		Iteration: &formats.LLMIteration{
			Prefill: []formats.PWLPoint{{Tokens: 1, Us: 1010}, {Tokens: 1001, Us: 11010}},
			Decode:  []formats.PWLPoint{{Tokens: 1, Us: 5000}, {Tokens: 101, Us: 6000}},
		}, Engine: &formats.LLMEngine{}}
	cl := llmspec.LLMClass{Name: "chat", Model: "m", SLO: formats.Duration(time.Hour), RateRPS: 1,
		InputTokens: llmspec.TokenProfile{Mean: 16}, OutputTokens: llmspec.TokenProfile{Mean: 2}}
	dep, err := dq.Build([]llmspec.LLMClass{cl}, dq.Setup{Profiles: []formats.LLMProfile{prof}, Instances: []dq.Instance{{Name: "i0", GPU: "A100", Model: "m"}}})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := dq.Registry().New(dep, dataplane.Config{Policy: dq.PolicyFCFS}, dq.PolicyQLM)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := pol.(Preempter); !ok {
		t.Fatalf("%T does not implement Preempter", pol)
	}
	outs := []int32{2, 3, 2}
	m := newMetrics()
	s, err := sim.New(dep, pol, []sim.Source{&sim.Times{T: []dataplane.Time{0, 0, 0}}}, sim.Options{Duration: dataplane.Second,
		Attrs: func(_ dataplane.AppID, n int64) dataplane.Attrs {
			return dataplane.Attrs{InTokens: 16, OutTokens: outs[n]}
		},
		OnFinish: func(now dataplane.Time, r *dataplane.Request) {
			m.llmFinished("chat", "length", r, r.Arrival, int64(now-r.Arrival), int(r.Attrs.OutTokens), pol, nil)
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := m.write(&b); err != nil {
		t.Fatal(err)
	}
	if want := `vllm:num_preemptions_total{engine="0",model_name="chat"} 1` + "\n"; !strings.Contains(b.String(), want) {
		t.Errorf("metrics lack %q:\n%s", want, grepLines(b.String(), "preempt"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
