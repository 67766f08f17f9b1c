package llmcap

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
)

// TestDrawFullDistribution: a probe's requests follow the class's whole length
// distribution (mean, spread, max), not its mean, at the asked rate; another seed draws
// others.
func TestDrawFullDistribution(t *testing.T) {
	cls := []llmspec.LLMClass{{Name: "a", RateRPS: 3, InputTokens: llmspec.TokenProfile{Mean: 300, Std: 200, Max: 4096}, OutputTokens: llmspec.TokenProfile{Mean: 250, Std: 150, Max: 1024}},
		{Name: "b", RateRPS: 1, InputTokens: llmspec.TokenProfile{Mean: 3000, Std: 1000, Max: 8000}, OutputTokens: llmspec.TokenProfile{Mean: 150, Std: 80, Max: 512}}}
	reqs, which := Draw(cls, 8, 20000, 1)
	var n [2]int
	var sum, sq [2]float64
	most := 0
	for i, r := range reqs {
		k := which[i]
		n[k]++
		sum[k] += float64(r.Prompt)
		sq[k] += float64(r.Prompt) * float64(r.Prompt)
		if k == 1 {
			most = max(most, r.Prompt)
		}
	}
	if share := float64(n[0]) / float64(len(reqs)); math.Abs(share-0.75) > 0.02 {
		t.Errorf("class a share %.3f, want 0.75", share)
	}
	for k, want := range []float64{300, 3000} {
		mean := sum[k] / float64(n[k])
		std := math.Sqrt(sq[k]/float64(n[k]) - mean*mean)
		if math.Abs(mean-want)/want > 0.05 || std < 0.8*cls[k].InputTokens.Std {
			t.Errorf("class %s prompts mean %.0f std %.0f, want about %.0f and %.0f", cls[k].Name, mean, std, want, cls[k].InputTokens.Std)
		}
	}
	if most > 8000 || most < 5500 {
		t.Errorf("class b's longest prompt %d, want its tail up to max 8000", most)
	}
	if rate := float64(len(reqs)) / (float64(reqs[len(reqs)-1].Arrival) / 1e6); math.Abs(rate-8)/8 > 0.03 {
		t.Errorf("arrival rate %.2f/s, want 8", rate)
	}
	other, _ := Draw(cls, 8, 20000, 2)
	if reflect.DeepEqual(other[:10], reqs[:10]) {
		t.Error("seed 2 drew seed 1's requests")
	}
}

// TestSpanBoundsTheWindow: the span a point runs is the window's: Draw's n requests arrive
// before its end and the (n+1)-th at it; its warm-up ends at the first judged request's
// arrival, the Skip first ones before it.
func TestSpanBoundsTheWindow(t *testing.T) {
	cls := []llmspec.LLMClass{{Name: "a", RateRPS: 2}, {Name: "b", RateRPS: 1}}
	for _, rate := range []float64{0.05, 3, 400} {
		const n = 500
		reqs, _ := Draw(cls, rate, n, Seed)
		dur, warmup, ok := Span(cls, rate, n, Seed)
		if !ok || len(reqs) != n {
			t.Fatalf("%g req/s: %d requests, span ok %t", rate, len(reqs), ok)
		}
		if reqs[n-1].Arrival >= dur {
			t.Errorf("%g req/s: the window's last request arrives at %d µs, not before the span's end %d", rate, reqs[n-1].Arrival, dur)
		}
		if skip := Skip(n); reqs[skip].Arrival != warmup || reqs[skip-1].Arrival >= warmup || skip != 25 {
			t.Errorf("%g req/s: warm-up ends at %d µs, skip %d: request %d arrives at %d", rate, warmup, skip, skip, reqs[skip].Arrival)
		}
	}
	if _, _, ok := Span([]llmspec.LLMClass{{Name: "a"}}, 0, 10, Seed); ok {
		t.Error("a rate of 0 drew a window")
	}
}

// metrics is one class's counts: n requests, all answered, missed of them past the slo.
func metrics(n, missed int64) workload.AppMetrics {
	return workload.AppMetrics{Requests: n, LLM: &workload.LLMMetrics{Answered: n, E2EMissed: missed}}
}

func TestMet(t *testing.T) {
	p90 := llmspec.LLMClass{Name: "p90", SLO: formats.Duration(1e9), SLOPercentile: "p90"}
	p99 := llmspec.LLMClass{Name: "p99", SLO: formats.Duration(1e9)}
	cases := []struct {
		name    string
		classes []llmspec.LLMClass
		apps    []workload.AppMetrics
		want    bool
	}{
		{"p99 met at 1 in 100", []llmspec.LLMClass{p99}, []workload.AppMetrics{metrics(100, 1)}, true},
		{"p99 missed at 2 in 100", []llmspec.LLMClass{p99}, []workload.AppMetrics{metrics(100, 2)}, false},
		{"p90 met at 10 in 100", []llmspec.LLMClass{p90}, []workload.AppMetrics{metrics(100, 10)}, true},
		{"one class of two misses", []llmspec.LLMClass{p90, p99}, []workload.AppMetrics{metrics(100, 0), metrics(100, 5)}, false},
		{"a class without requests is not judged", []llmspec.LLMClass{p90, p99}, []workload.AppMetrics{metrics(100, 0), {}}, true},
		{"unanswered requests miss", []llmspec.LLMClass{p99}, []workload.AppMetrics{{Requests: 100, LLM: &workload.LLMMetrics{Answered: 90}}}, false},
		{"no LLM metrics: attainment at the slo percentile", []llmspec.LLMClass{p90}, []workload.AppMetrics{{Requests: 100, Attainment: 0.89}}, false},
	}
	for _, tc := range cases {
		if got := Met(tc.classes, tc.apps); got != tc.want {
			t.Errorf("%s: Met %t, want %t", tc.name, got, tc.want)
		}
	}
}

// threshold is a probe whose point meets the SLO up to a rate; it records the windows asked.
type threshold struct {
	rate  float64
	n     []int
	seeds []uint64
}

func (th *threshold) probe(rate float64, n int, seed uint64) ([]workload.AppMetrics, error) {
	th.n, th.seeds = append(th.n, n), append(th.seeds, seed)
	missed := int64(0)
	if rate > th.rate {
		missed = 50
	}
	return []workload.AppMetrics{metrics(int64(n), missed)}, nil
}

// TestCapacityBisection: the judge brackets from any start and bisects to Precision below
// the rate where the SLOs stop holding, asks every probe for the same window (Requests and
// Seed by default), and returns the metrics of the rate it settles on; not even MinRate: 0.
func TestCapacityBisection(t *testing.T) {
	cls := []llmspec.LLMClass{{Name: "a", RateRPS: 1, SLO: formats.Duration(1e9)}}
	for _, th := range []float64{0.01, 0.7, 1, 7.3, 300} {
		for _, start := range []float64{1.0 / 64, 1, 4096} {
			p := &threshold{rate: th}
			r, err := Capacity(cls, start, 0, 0, p.probe)
			if err != nil {
				t.Fatal(err)
			}
			if r.Rate > th || r.Rate < th/(1+Precision)-1e-4 || r.At > th || math.Abs(r.At-r.Rate) > 5e-5 {
				t.Errorf("threshold %g from %g: capacity %g (at %g), want within %.0f%% below it", th, start, r.Rate, r.At, 100*Precision)
			}
			if len(r.Apps) != 1 || r.Apps[0].LLM.E2EMissed != 0 {
				t.Errorf("threshold %g from %g: metrics %+v, want the met point's", th, start, r.Apps)
			}
			for i := range p.n {
				if p.n[i] != Requests || p.seeds[i] != Seed {
					t.Fatalf("probe %d: window %d requests seed %d, want %d and %d", i, p.n[i], p.seeds[i], Requests, Seed)
				}
			}
		}
	}
	p := &threshold{rate: 0}
	if r, err := Capacity(cls, 1, 100, 3, p.probe); err != nil || r.Rate != 0 || p.n[0] != 100 || p.seeds[0] != 3 {
		t.Errorf("threshold 0: %+v, %v, windows %v seeds %v: want rate 0 over 100 requests of seed 3", r, err, p.n, p.seeds)
	}
	boom := errors.New("boom")
	if _, err := Capacity(cls, 1, 0, 0, func(float64, int, uint64) ([]workload.AppMetrics, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("a probe's error: %v", err)
	}
}

func TestStart(t *testing.T) {
	chat := llmspec.LLMClass{Name: "chat", RateRPS: 3, OutputTokens: llmspec.TokenProfile{Mean: 250}}
	long := llmspec.LLMClass{Name: "long", RateRPS: 1, OutputTokens: llmspec.TokenProfile{Mean: 1250}}
	cases := []struct {
		name    string
		theta   float64
		classes []llmspec.LLMClass
		want    float64
	}{
		{"no throughput", 0, []llmspec.LLMClass{chat}, 1},
		{"one class", 10000, []llmspec.LLMClass{chat}, 16},        // 10000/250/2 = 20 → 2^4
		{"mix by rate", 10000, []llmspec.LLMClass{chat, long}, 8}, // mean out 500: 10 → 2^3
		{"capped high", 1e9, []llmspec.LLMClass{chat}, 4096},      // 2^12
		{"capped low", 1, []llmspec.LLMClass{chat}, 1.0 / 64},     // 2^-6
		{"all rates 0", 10000, []llmspec.LLMClass{{Name: "z", OutputTokens: chat.OutputTokens}}, 1},
	}
	for _, tc := range cases {
		if got := Start(tc.theta, tc.classes); got != tc.want {
			t.Errorf("%s: Start %g, want %g", tc.name, got, tc.want)
		}
	}
}
