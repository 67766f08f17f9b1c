package qlmbench

import (
	"slices"
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// TestRooflineProfiles: the multi-model set-up's instances host exactly the models that fit
// them — Llama-70B only on the 4×A100 node, Vicuna-13B on single A100s (not an A10),
// Mistral-7B on both GPU types.
func TestRooflineProfiles(t *testing.T) {
	ps, err := rooflineProfiles(Workloads[1])
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, p := range ps {
		got[p.GPU] = append(got[p.GPU], p.Model)
		if p.Iteration == nil {
			t.Errorf("%s on %s: no iteration model", p.Model, p.GPU)
		}
	}
	want := map[string][]string{"A100": {"mistral-7b", "vicuna-13b"}, "4xA100": {"llama-2-70b"}, "A10": {"mistral-7b"}}
	for g, ms := range want {
		if !slices.Equal(got[g], ms) {
			t.Errorf("%s hosts %v, want %v", g, got[g], ms)
		}
	}
}

// TestReplayWorkloadMulti: a short synthetic trace on the multi-model set-up spreads requests
// over the three models, every request finishes, and QLM meets at least as many SLOs as
// vLLM-FCFS (the paper's direction).
func TestReplayWorkloadMulti(t *testing.T) {
	var rows []row
	for i := 0; i < 240; i++ {
		rows = append(rows, row{t: dataplane.Time(i) * dataplane.Second / 8, in: int32(200 + 37*(i%13)), out: int32(50 + 29*(i%17))})
	}
	res, err := ReplayWorkload(rows, Workloads[1], nil, 1, 0.3, 40*dataplane.Second, []string{"qlm", "qlm-vllm-fcfs"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	// The multi set-up replays at half the rate: arrivals at i/4 s, 160 of them inside 40 s.
	if len(res) != 2 || res[0].Requests != 160 || res[1].Requests != 160 {
		t.Fatalf("results %+v", res)
	}
	if res[0].Overall < res[1].Overall {
		t.Errorf("QLM %.3f below vLLM-FCFS %.3f", res[0].Overall, res[1].Overall)
	}
	t.Logf("QLM %.3f, FCFS %.3f", res[0].Overall, res[1].Overall)
}

// TestReplayTimings: every result carries E2E percentiles and output tokens per second over
// all classes and per class, counting the trace's own output tokens.
func TestReplayTimings(t *testing.T) {
	var rows []row
	for i := 0; i < 40; i++ {
		rows = append(rows, row{t: dataplane.Time(i) * dataplane.Second / 4, in: int32(100 + 10*i), out: int32(20 + i)})
	}
	pr, err := LoadProfile("")
	if err != nil {
		t.Fatal(err)
	}
	res, err := ReplayWorkload(rows, Workloads[0], pr.LLMs, 1, 0.5, 20*dataplane.Second, []string{"qlm-vllm-fcfs"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	if r.Timing.Class != "total" || r.Timing.E2E.P50Us <= 0 || r.Timing.E2E.P99Us < r.Timing.E2E.P50Us || r.Timing.OutputTokensPerS <= 0 {
		t.Fatalf("timing %+v", r.Timing)
	}
	if len(r.Classes) != 2 || r.Classes[0].Class != "mistral-7b-interactive" || r.Classes[1].Class != "mistral-7b-batch" {
		t.Fatalf("classes %+v", r.Classes)
	}
	var perClass float64
	for _, c := range r.Classes {
		perClass += c.OutputTokensPerS
	}
	if d := perClass - r.Timing.OutputTokensPerS; d > 1e-3 || d < -1e-3 {
		t.Fatalf("per-class tokens/s sum %g, total %g", perClass, r.Timing.OutputTokensPerS)
	}
}
