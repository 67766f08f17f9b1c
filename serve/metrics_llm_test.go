package serve

import (
	"bytes"
	"strings"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
)

// preempter is a policy that counts preemptions (Preempter) and prefix-cache queries and
// hits (PrefixCacher).
type preempter struct {
	dataplane.Policy
	n, q, h int64
}

func (p *preempter) Preemptions() int64                 { return p.n }
func (p *preempter) PrefixCache() (queries, hits int64) { return p.q, p.h }

// TestLLMMetrics: answered LLM requests feed the TTFT, TPOT and E2E histograms (vLLM's
// buckets, reaching minutes) and the token and preemption counters; a 7.2 s completion lands
// in a finite bucket of the general latency histogram, not +Inf.
func TestLLMMetrics(t *testing.T) {
	m := newMetrics()
	pol := &preempter{}
	const at = 10 * dataplane.Second
	reqs := []struct {
		first   dataplane.Time // from at; Never: unstamped
		latUs   int64
		in, out int32
		preempt int64
		q, h    int64 // the policy's prefix-cache counts so far
	}{
		{first: 300 * dataplane.Millisecond, latUs: 7_200_000, in: 1000, out: 70, preempt: 2, q: 1000, h: 512},
		{first: 45 * dataplane.Second, latUs: 90_000_000, in: 50, out: 1, preempt: 3, q: 1050, h: 512},
		{first: dataplane.Never, latUs: 500_000, in: 20, out: 5, preempt: 3, q: 1070, h: 528},
	}
	for _, q := range reqs {
		r := &dataplane.Request{Arrival: at, FirstToken: dataplane.Never, Attrs: dataplane.Attrs{InTokens: q.in, OutTokens: q.out}}
		if q.first != dataplane.Never {
			r.FirstToken = at + q.first
		}
		pol.n, pol.q, pol.h = q.preempt, q.q, q.h
		m.finished(m.model("chat"), "completed", q.latUs)
		m.llmFinished("chat", "length", r, at, q.latUs, int(q.out), pol, nil)
	}
	var b bytes.Buffer
	if err := m.write(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{
		`plan_request_latency_seconds_bucket{model="chat",le="10"} 2`,
		`plan_request_latency_seconds_bucket{model="chat",le="120"} 3`,
		`vllm:time_to_first_token_seconds_bucket{engine="0",model_name="chat",le="0.5"} 1`,
		`vllm:time_to_first_token_seconds_bucket{engine="0",model_name="chat",le="80"} 2`,
		`vllm:time_to_first_token_seconds_count{engine="0",model_name="chat"} 2`,
		// (7.2 − 0.3) s over 69 tokens = 0.1 s per token; one-token and unstamped requests
		// have no TPOT.
		`vllm:request_time_per_output_token_seconds_bucket{engine="0",model_name="chat",le="0.075"} 0`,
		`vllm:request_time_per_output_token_seconds_bucket{engine="0",model_name="chat",le="0.1"} 1`,
		`vllm:request_time_per_output_token_seconds_count{engine="0",model_name="chat"} 1`,
		`vllm:e2e_request_latency_seconds_bucket{engine="0",model_name="chat",le="120"} 3`,
		`vllm:e2e_request_latency_seconds_count{engine="0",model_name="chat"} 3`,
		`vllm:prompt_tokens_total{engine="0",model_name="chat"} 1070`,
		`vllm:generation_tokens_total{engine="0",model_name="chat"} 76`,
		`vllm:num_preemptions_total{engine="0",model_name="chat"} 3`,
		`vllm:request_success_total{engine="0",finished_reason="length",model_name="chat"} 3`,
		`vllm:request_success_total{engine="0",finished_reason="abort",model_name="chat"} 0`,
		`vllm:request_prompt_tokens_bucket{engine="0",model_name="chat",le="1000"} 3`,
		`vllm:request_generation_tokens_count{engine="0",model_name="chat"} 3`,
		`vllm:prefix_cache_queries_total{engine="0",model_name="chat"} 1070`,
		`vllm:prefix_cache_hits_total{engine="0",model_name="chat"} 528`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("missing %s", want)
		}
	}
	for _, name := range LLMMetricNames {
		switch name {
		case "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc", "vllm:cache_config_info", "vllm:iteration_tokens_total", "vllm:request_queue_time_seconds", "vllm:request_inference_time_seconds", "vllm:request_prefill_time_seconds", "vllm:inter_token_latency_seconds":
			continue // set from the engine (the driver's snapshot and steps; the request carries no dispatch stamp here)
		}
		if !strings.Contains(text, "# TYPE "+name+" ") {
			t.Errorf("metric family %s missing", name)
		}
	}
}

// TestLatencyBucketsPastEverySLO: the general latency histogram's last bucket is at least the
// longest SLO a plan may set, so an on-time completion never lands in +Inf.
func TestLatencyBucketsPastEverySLO(t *testing.T) {
	if last := latencyBuckets[len(latencyBuckets)-1]; last < formats.MaxDuration.Seconds() {
		t.Fatalf("last latency bucket %g s, below the longest SLO %s", last, formats.MaxDuration)
	}
}

// TestPreemptionsSeries: vllm:num_preemptions_total shows for every answered model of a
// policy that counts preemptions, at 0 before the first one (vLLM creates the counter with
// its engine, ecosystem-dropin §1); a policy that counts none gets no series rather than a
// made-up 0.
func TestPreemptionsSeries(t *testing.T) {
	type plain struct{ dataplane.Policy }
	for _, tc := range []struct {
		name string
		pol  dataplane.Policy
		want string // "" = no series
	}{
		{"none yet", &preempter{}, `vllm:num_preemptions_total{engine="0",model_name="chat"} 0`},
		{"some", &preempter{n: 4}, `vllm:num_preemptions_total{engine="0",model_name="chat"} 4`},
		{"policy does not count", &plain{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMetrics()
			r := &dataplane.Request{FirstToken: 5 * dataplane.Millisecond, Attrs: dataplane.Attrs{InTokens: 10, OutTokens: 3}}
			m.llmFinished("chat", "length", r, 0, 20_000, 3, tc.pol, nil)
			var b bytes.Buffer
			if err := m.write(&b); err != nil {
				t.Fatal(err)
			}
			got := grepLines(b.String(), "vllm:num_preemptions_total{")
			if got != tc.want {
				t.Errorf("series %q, want %q", got, tc.want)
			}
		})
	}
}

// TestChoiceGroupMetrics: a client request of n choices is n engine requests; vLLM observes
// vllm:request_params_n and vllm:request_max_num_generation_tokens once for it, when its
// last choice finishes (n, the longest choice), and counts each choice everywhere else.
func TestChoiceGroupMetrics(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n       int
		gens    []int // each choice's received tokens, in finishing order
		reasons []string
		want    []string
	}{
		{"one choice", 0, []int{4}, []string{"length"}, []string{
			`vllm:request_params_n_count{engine="0",model_name="chat"} 1`,
			`vllm:request_params_n_sum{engine="0",model_name="chat"} 1`,
			`vllm:request_max_num_generation_tokens_sum{engine="0",model_name="chat"} 4`,
			`vllm:request_success_total{engine="0",finished_reason="length",model_name="chat"} 1`,
		}},
		{"n=3", 3, []int{2, 7, 5}, []string{"length", "length", "length"}, []string{
			`vllm:request_params_n_count{engine="0",model_name="chat"} 1`,
			`vllm:request_params_n_sum{engine="0",model_name="chat"} 3`,
			`vllm:request_max_num_generation_tokens_count{engine="0",model_name="chat"} 1`,
			`vllm:request_max_num_generation_tokens_sum{engine="0",model_name="chat"} 7`,
			`vllm:request_success_total{engine="0",finished_reason="length",model_name="chat"} 3`,
			`vllm:request_generation_tokens_count{engine="0",model_name="chat"} 3`,
		}},
		{"n=2, not all finished", 2, []int{3}, []string{"length"}, []string{
			`vllm:request_params_n_count{engine="0",model_name="chat"} 0`,
		}},
		{"n=2, last aborted", 2, []int{3, 1}, []string{"length", "abort"}, []string{
			`vllm:request_params_n_count{engine="0",model_name="chat"} 0`,
			`vllm:request_success_total{engine="0",finished_reason="abort",model_name="chat"} 1`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMetrics()
			var grp *ChoiceGroup
			if tc.n > 0 {
				grp = NewChoiceGroup(tc.n)
			}
			// The histograms exist once any request observed them.
			m.llmSeries().paramN.WithLabelValues("chat", engineLabel)
			for i, g := range tc.gens {
				r := &dataplane.Request{FirstToken: dataplane.Millisecond, Attrs: dataplane.Attrs{InTokens: 10}}
				m.llmFinished("chat", tc.reasons[i], r, 0, 10_000, g, &preempter{}, grp)
			}
			var b bytes.Buffer
			if err := m.write(&b); err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.want {
				if !strings.Contains(b.String(), want+"\n") {
					t.Errorf("missing %s in\n%s", want, grepLines(b.String(), "request_params_n"))
				}
			}
		})
	}
}
