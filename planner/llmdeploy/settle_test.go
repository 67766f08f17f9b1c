package llmdeploy

import (
	"github.com/plan-dev/plan/planner/llmcap"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/dataplane/llm/sched/fcfs"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
)

// TestAllowedMisses: m misses of n keep an SLO judged at pct met exactly when m ≤
// allowedMisses(n, pct), by the judge's rounding of the share (to 1e-6, as
// workload.LLMChecks reports it; no requests meet nothing).
func TestAllowedMisses(t *testing.T) {
	for _, n := range []int{0, 1, 7, 99, 100, 101, 1900} {
		for _, pct := range []float64{0.5, 0.9, 0.95, 0.99, 0.999, 1} {
			a := allowedMisses(n, pct)
			for m := 0; m <= n; m++ {
				share := math.Round(float64(n-m)/float64(n)*1e6) / 1e6
				if met := share >= pct; met != (m <= a) {
					t.Fatalf("n=%d pct=%g: %d misses met=%v, allowedMisses %d", n, pct, m, met, a)
				}
			}
		}
	}
}

// TestFailFastProbeSameVerdict: a probe that may stop once it has failed (Capacity's) gives
// the same verdict as the full replay at every rate, the same predictions where it meets,
// and, far above the candidate's capacity, stops with requests left unfinished (the replay
// it saves).
func TestFailFastProbeSameVerdict(t *testing.T) {
	in := inputs(t, "workload.yaml", "cluster.yaml")
	o := small
	o.Requests = 400
	o.KVLinkGBps, o.Modes = 450, []Mode{Aggregated, Disaggregated}
	cands, err := Enumerate(in, o)
	if err != nil {
		t.Fatal(err)
	}
	picked := map[Mode]Candidate{}
	for _, c := range cands {
		if _, ok := picked[c.Mode]; !ok {
			picked[c.Mode] = c
		}
	}
	for _, mode := range []Mode{Aggregated, Disaggregated} {
		c, ok := picked[mode]
		if !ok {
			t.Fatalf("no %v candidate", mode)
		}
		classes := classesOf(in.Workload, c.Model)
		ev := Evaluators[mode]
		e, err := Capacity(ev, c, classes, o)
		if err != nil {
			t.Fatal(err)
		}
		if e.Rate <= 0 {
			t.Fatalf("%s: capacity 0", c.Label())
		}
		for _, f := range []float64{0.25, 0.9, 1, 1.02, 1.1, 2, 8} {
			rate := e.Rate * f
			slow, fast := o, o
			fast.failFast = true
			want, err := ev.Probe(c, classes, rate, slow)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ev.Probe(c, classes, rate, fast)
			if err != nil {
				t.Fatal(err)
			}
			if met(got) != met(want) {
				t.Errorf("%s at %.4g req/s: fail-fast verdict %v, full %v", c.Label(), rate, met(got), met(want))
			}
			if met(want) && !reflect.DeepEqual(got, want) {
				t.Errorf("%s at %.4g req/s: met, but the fail-fast predictions differ:\n%+v\n%+v", c.Label(), rate, got, want)
			}
		}
		if mode == Aggregated {
			// At 8× capacity the watch stops the replay before every request is answered.
			reqs, cls := llmcap.Draw(classes, e.Rate*8, o.Requests, o.withDefaults().Seed)
			res, _ := llm.ReplayWatched(llm.NewModel(c.Roles[0].Profile), reqs, fcfs.New(), newSettle(classes, reqs, cls).watch)
			left := 0
			for _, r := range res {
				if !r.Refused && r.Done == dataplane.Never {
					left++
				}
			}
			if left == 0 {
				t.Errorf("%s at 8× capacity: the replay ran to its end", c.Label())
			}
		}
	}
}

// TestSettleMatchesJudge: told every result of a full replay, the watch stops exactly when
// Judge fails the probe (never when it meets: the stop is sound; always when it fails: it
// stops as soon as the failure is certain), across rates from well within a candidate's
// capacity to far above it.
func TestSettleMatchesJudge(t *testing.T) {
	in := inputs(t, "workload.yaml", "cluster.yaml")
	o := small
	o.Requests = 400
	cands, err := Enumerate(in, o)
	if err != nil {
		t.Fatal(err)
	}
	c := cands[0]
	classes := classesOf(in.Workload, c.Model)
	e, err := Capacity(Evaluators[Aggregated], c, classes, o)
	if err != nil {
		t.Fatal(err)
	}
	verdicts := map[bool]int{}
	for _, f := range []float64{0.5, 0.9, 1, 1.01, 1.02, 1.03, 1.05, 1.1, 1.3, 2, 8} {
		reqs, cls := llmcap.Draw(classes, e.Rate*f, o.Requests, o.withDefaults().Seed)
		res, _ := llm.Replay(llm.NewModel(c.Roles[0].Profile), reqs, fcfs.New())
		s, stopped := newSettle(classes, reqs, cls), false
		for i := range res {
			if res[i].Refused || res[i].Done != dataplane.Never {
				stopped = s.watch(i, &res[i]) || stopped
			}
		}
		v := met(Judge(classes, reqs, cls, res))
		verdicts[v]++
		if stopped == v {
			t.Errorf("%s at %.4g req/s: Judge meets %v, the watch stopped %v", c.Label(), e.Rate*f, v, stopped)
		}
	}
	if verdicts[true] == 0 || verdicts[false] == 0 {
		t.Fatalf("verdicts %v: want rates that meet and rates that fail", verdicts)
	}
}

// met is a probe's verdict as Capacity reads it.
func met(ps []ClassPrediction) bool {
	for _, p := range ps {
		if p.Requests > 0 && !p.Met() {
			return false
		}
	}
	return true
}

// TestSettleAtTheBoundary: with exactly as many misses of one SLO as its percentile allows,
// Judge meets the class and the watch does not stop; one more, Judge fails it and the watch
// stops. Every SLO of two classes, misses made by hand (warm-up requests all miss and count
// for neither), refused requests missing every SLO.
func TestSettleAtTheBoundary(t *testing.T) {
	ms := func(x float64) formats.Duration { return formats.Duration(x * float64(time.Millisecond)) }
	classes := []llmspec.LLMClass{
		{Name: "chat", SLO: ms(20000), TTFTSLO: ms(500), TTFTPercentile: "p90", TPOTSLO: ms(50)},
		{Name: "batch", SLO: ms(10000), SLOPercentile: "p95"},
	}
	const n = 400
	reqs, cls := make([]llm.Request, n), make([]int, n)
	for i := range reqs {
		reqs[i] = llm.Request{ID: dataplane.ReqID(i), Arrival: dataplane.Time(i) * 1000, Prompt: 100, Out: 11}
		cls[i] = i % 2
	}
	skip := llmcap.Skip(n)
	// answer is request i's result: TTFT ttft ms, then TPOT tpot ms a token.
	answer := func(i int, ttft, tpot float64) llm.Result {
		a := reqs[i].Arrival
		first := a + dataplane.Time(ttft*1000)
		return llm.Result{ID: reqs[i].ID, FirstToken: first, Done: first + dataplane.Time(tpot*1000)*dataplane.Time(reqs[i].Out-1)}
	}
	misses := []struct {
		name  string
		class int
		pct   float64
		miss  func(i int) llm.Result // request i's answer missing this SLO only (refused: all, the tightest p99)
	}{
		{"chat e2e", 0, 0.99, func(i int) llm.Result { reqs[i].Out = 1000; return answer(i, 100, 40) }},
		{"chat ttft", 0, 0.90, func(i int) llm.Result { return answer(i, 1000, 10) }},
		{"chat tpot", 0, 0.99, func(i int) llm.Result { return answer(i, 100, 60) }},
		{"chat refused", 0, 0.99, func(i int) llm.Result {
			return llm.Result{ID: reqs[i].ID, FirstToken: dataplane.Never, Done: dataplane.Never, Refused: true}
		}},
		{"batch e2e", 1, 0.95, func(i int) llm.Result { return answer(i, 100, 1100) }},
	}
	for _, c := range misses {
		judged := (n - skip) / 2
		a := allowedMisses(judged, c.pct)
		for _, m := range []int{a - 1, a, a + 1} {
			for i := range reqs {
				reqs[i].Out = 11
			}
			res := make([]llm.Result, n)
			left := m
			for i := range res {
				switch {
				case i < skip:
					res[i] = answer(i, 100_000, 5000) // the warm-up: judged by neither
				case cls[i] == c.class && left > 0:
					res[i], left = c.miss(i), left-1
				default:
					res[i] = answer(i, 100, 10)
				}
			}
			s, stopped := newSettle(classes, reqs, cls), false
			for i := range res {
				stopped = s.watch(i, &res[i]) || stopped
			}
			v := met(Judge(classes, reqs, cls, res))
			if want := m <= a; v != want || stopped == want {
				t.Errorf("%s, %d misses of %d judged (%d allowed): Judge meets %v, the watch stopped %v; want meets %v", c.name, m, judged, a, v, stopped, want)
			}
		}
	}
}
