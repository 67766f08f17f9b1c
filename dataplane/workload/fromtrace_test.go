package workload

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
)

func reqsAt(secs ...float64) []formats.TraceRequest {
	out := make([]formats.TraceRequest, len(secs))
	for i, s := range secs {
		out[i] = formats.TraceRequest{TimeUs: int64(s * 1e6), Target: "m"}
	}
	return out
}

// TestFromTraceRates: mean over the trace's span, peak over the busiest window, for request
// and counts traces, with the rate basis chosen.
func TestFromTraceRates(t *testing.T) {
	cases := []struct {
		name       string
		tr         formats.Trace
		o          FromTraceOptions
		mean, peak float64
		rate       float64 // written rate_rps
	}{
		{"requests, peak", formats.Trace{Requests: reqsAt(0, 0.5, 1, 1.2, 3)}, FromTraceOptions{Window: time.Second}, 5.0 / 3, 2, 2},
		{"requests, mean", formats.Trace{Requests: reqsAt(0, 0.5, 1, 1.2, 3)}, FromTraceOptions{Window: time.Second, Basis: "mean"}, 5.0 / 3, 2, 1.67},
		{"trace shorter than the window", formats.Trace{Requests: reqsAt(0, 1, 2)}, FromTraceOptions{}, 1.5, 1.5, 1.5},
		{"counts", formats.Trace{Counts: &formats.RateSeries{Interval: formats.Duration(time.Second), Target: "m", Counts: []int64{1, 2, 3, 10}}}, FromTraceOptions{}, 4, 10, 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, sums, err := FromTrace("t.json", &c.tr, c.o)
			if err != nil {
				t.Fatal(err)
			}
			s := sums[0]
			if d := s.MeanRPS - c.mean; d > 1e-9 || d < -1e-9 {
				t.Errorf("mean %g, want %g", s.MeanRPS, c.mean)
			}
			if s.PeakRPS != c.peak {
				t.Errorf("peak %g, want %g", s.PeakRPS, c.peak)
			}
			if len(ppipesec.ModelsOf(w)) != 1 || ppipesec.ModelsOf(w)[0].RateRPS != c.rate || ppipesec.ModelsOf(w)[0].Name != "m" {
				t.Errorf("models %+v, want m at %g", ppipesec.ModelsOf(w), c.rate)
			}
		})
	}
}

// TestFromTraceLLMClasses: token percentiles (nearest rank), the token profile, and SLOs
// suggested from the fastest profile of the model (5 × the p99 request unloaded).
func TestFromTraceLLMClasses(t *testing.T) {
	var reqs []formats.TraceRequest
	for i := 1; i <= 100; i++ {
		reqs = append(reqs, formats.TraceRequest{TimeUs: int64(i) * 100000, Target: "llm", Class: "chat", InputTokens: 10 * i, OutputTokens: i})
	}
	profiles := []formats.LLMProfile{
		{Model: "llm", GPU: "slow", PrefillBaseUs: 1000, PrefillUsPerToken: 20, DecodeUsPerToken: 40000},
		{Model: "llm", GPU: "fast", PrefillBaseUs: 1000, PrefillUsPerToken: 10, DecodeUsPerToken: 20000},
		{Model: "other", GPU: "fastest", PrefillBaseUs: 1, PrefillUsPerToken: 1, DecodeUsPerToken: 1},
	}
	w, sums, err := FromTrace("t.json", &formats.Trace{Requests: reqs}, FromTraceOptions{Profiles: profiles})
	if err != nil {
		t.Fatal(err)
	}
	s := sums[0]
	if s.InP50 != 500 || s.InP90 != 900 || s.InP99 != 990 || s.OutP99 != 99 {
		t.Errorf("percentiles in %d/%d/%d out p99 %d, want 500/900/990, 99", s.InP50, s.InP90, s.InP99, s.OutP99)
	}
	c := llmspec.ClassesOf(w)[0]
	if c.Name != "chat" || c.Model != "llm" || c.InputTokens.Max != 1000 || c.InputTokens.Mean != 505 {
		t.Errorf("class %+v", c)
	}
	// fast: prefill 1000 + 10·990 = 10.9 ms; E2E 10.9 ms + 98 × 20 ms = 1970.9 ms; × 5.
	if got, want := c.SLO.D(), 9900*time.Millisecond; got != want {
		t.Errorf("slo %v, want %v (5 × 1970.9 ms, two significant digits up)", got, want)
	}
	if got, want := c.TTFTSLO.D(), 55*time.Millisecond; got != want {
		t.Errorf("ttft_slo %v, want %v (5 × 10.9 ms, up)", got, want)
	}
	if !strings.Contains(s.SLOFrom, "fast") {
		t.Errorf("SLO from %q, want the fast profile", s.SLOFrom)
	}
	w, _, err = FromTrace("t.json", &formats.Trace{Requests: reqs}, FromTraceOptions{SLO: 3 * time.Second})
	if err != nil || llmspec.ClassesOf(w)[0].SLO.D() != 3*time.Second || llmspec.ClassesOf(w)[0].TTFTSLO != 0 {
		t.Errorf("--slo 3s: %+v, %v", llmspec.ClassesOf(w), err)
	}
}

// TestFromTraceRefuses: traces with nothing to classify name the field.
func TestFromTraceRefuses(t *testing.T) {
	llm := func(ts int64, target string, in, out int) formats.TraceRequest {
		return formats.TraceRequest{TimeUs: ts, Target: target, InputTokens: in, OutputTokens: out}
	}
	cases := []struct {
		name  string
		tr    formats.Trace
		o     FromTraceOptions
		want  string
		unclf bool
	}{
		{"empty", formats.Trace{}, FromTraceOptions{}, "requests: empty", true},
		{"no timestamps", formats.Trace{Requests: []formats.TraceRequest{llm(5, "m", 1, 1), llm(5, "m", 1, 1)}}, FromTraceOptions{SLO: time.Second}, "requests[].t_us: all 5", true},
		{"mixed", formats.Trace{Requests: []formats.TraceRequest{llm(0, "m", 1, 1), {TimeUs: 9, Target: "m"}}}, FromTraceOptions{}, "1 of 2 requests carry token counts", true},
		{"no model", formats.Trace{Requests: []formats.TraceRequest{{TimeUs: 0}, {TimeUs: 9, Target: "m"}}}, FromTraceOptions{}, "requests[0].target: empty", false},
		{"class on two models", formats.Trace{Requests: []formats.TraceRequest{{TimeUs: 0, Target: "a", Class: "c"}, {TimeUs: 9, Target: "b", Class: "c"}}}, FromTraceOptions{}, `requests[1].target: "b": class "c" already targets "a"`, false},
		{"LLM without SLO or profile", formats.Trace{Requests: []formats.TraceRequest{llm(0, "m", 1, 1), llm(9, "m", 1, 1)}}, FromTraceOptions{}, `model "m": no SLO to suggest`, false},
		{"half a request", formats.Trace{Requests: []formats.TraceRequest{llm(0, "m", 1, 1), llm(9, "m", 1, 0)}}, FromTraceOptions{SLO: time.Second}, "requests[1]: input_tokens 1, output_tokens 0", false},
		{"counts without interval", formats.Trace{Counts: &formats.RateSeries{Target: "m", Counts: []int64{1}}}, FromTraceOptions{}, "counts.interval", true},
		{"bad basis", formats.Trace{Requests: reqsAt(0, 1)}, FromTraceOptions{Basis: "median"}, `--rate "median"`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := FromTrace("t.json", &c.tr, c.o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want one containing %q", err, c.want)
			}
			if errors.Is(err, ErrUnclassifiable) != c.unclf {
				t.Errorf("errors.Is(ErrUnclassifiable) = %v, want %v", !c.unclf, c.unclf)
			}
		})
	}
}
