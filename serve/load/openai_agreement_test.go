package load

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	dq "github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/sim"
)

// llmTrace draws a trace of the plan's LLM classes at load lf over dur: each class's Poisson
// arrivals at lf × its rate, and per request input and output tokens from the class's
// profile (a normal truncated to [1, max]); seeded.
func llmTrace(t testing.TB, classes []llmspec.LLMClass, lf float64, dur time.Duration, seed uint64) *formats.Trace {
	t.Helper()
	poisson, _ := workload.ParseArrival("poisson")
	rng := rand.New(rand.NewPCG(seed, 7))
	draw := func(p llmspec.TokenProfile) int {
		v := int(math.Round(p.Mean + p.Std*rng.NormFloat64()))
		return min(max(v, 1), max(p.Max, 1))
	}
	var reqs []formats.TraceRequest
	for i, c := range classes {
		src, err := poisson.New(c.RateRPS*lf, c.Name, workload.PointSeed(seed, lf, i))
		if err != nil {
			t.Fatal(err)
		}
		for at := src.Next(); at != dataplane.Never && at < dataplane.Time(dur/time.Microsecond); at = src.Next() {
			reqs = append(reqs, formats.TraceRequest{TimeUs: int64(at), Target: c.Name, InputTokens: draw(c.InputTokens), OutputTokens: draw(c.OutputTokens)})
		}
	}
	sortTrace(reqs)
	return &formats.Trace{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindTrace}, Requests: reqs}
}

func sortTrace(r []formats.TraceRequest) {
	for i := 1; i < len(r); i++ {
		for j := i; j > 0 && r[j].TimeUs < r[j-1].TimeUs; j-- {
			r[j], r[j-1] = r[j-1], r[j]
		}
	}
}

// simulateTrace replays tr through the plan's deployment in the simulator, each request with
// its own tokens (what `plan simulate --trace` does with a trace that carries tokens), and
// returns the mean TTFT and E2E in ms.
func simulateTrace(t testing.TB, p *formats.Plan, tr *formats.Trace) (ttft, e2e float64, n int) {
	t.Helper()
	var sumE2E float64
	st, n := simulatePolicy(t, p, tr, func(now dataplane.Time, r *dataplane.Request) {
		sumE2E += float64(now - r.Arrival)
	})
	var sumTTFT float64
	for _, v := range st.TTFT {
		sumTTFT += float64(v)
	}
	return sumTTFT / float64(len(st.TTFT)) / 1e3, sumE2E / float64(n) / 1e3, n
}

// simulatePolicy replays tr through the plan's deployment under the qlm policy, each request
// with its own tokens, calling onFinish (when not nil) for each finished request, and returns
// the policy's statistics and the number of requests finished.
func simulatePolicy(t testing.TB, p *formats.Plan, tr *formats.Trace, onFinish func(now dataplane.Time, r *dataplane.Request)) (*dq.Stats, int) {
	t.Helper()
	dep, err := dq.FromPlan(p)
	if err != nil {
		t.Fatal(err)
	}
	app := map[string]int{}
	for i, a := range dep.Apps {
		app[a.Name] = i
	}
	times := make([][]dataplane.Time, len(dep.Apps))
	attrs := make([][]dataplane.Attrs, len(dep.Apps))
	for _, r := range tr.Requests {
		a, ok := app[r.Target]
		if !ok {
			t.Fatalf("trace target %q: not a class of the plan", r.Target)
		}
		times[a] = append(times[a], dataplane.Time(r.TimeUs))
		attrs[a] = append(attrs[a], dataplane.Attrs{InTokens: int32(r.InputTokens), OutTokens: int32(r.OutputTokens)})
	}
	srcs := make([]sim.Source, len(dep.Apps))
	for i := range srcs {
		srcs[i] = &sim.Times{T: times[i]}
	}
	pol, err := dq.Registry().New(dep, dataplane.Config{Policy: dq.PolicyQLM}, dq.PolicyQLM)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	s, err := sim.New(dep, pol, srcs, sim.Options{Duration: 10 * 60 * dataplane.Second, Seed: 1,
		Attrs: func(a dataplane.AppID, k int64) dataplane.Attrs { return attrs[a][k] },
		OnFinish: func(now dataplane.Time, r *dataplane.Request) {
			if onFinish != nil {
				onFinish(now, r)
			}
			n++
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(); err != nil {
		t.Fatal(err)
	}
	return pol.(*dq.Policy).Stats(), n
}

// TestOpenAIAgreement checks the LLM path end to end: `plan load --openai` against `plan
// serve` (emulated instances) and the simulator on the same trace at load 0.5 — the bundled
// QLM plan's classes with per-request tokens — agree within 5% on mean E2E, and on mean TTFT
// within 5% or one decode step (see the comparison below).
// A wall-clock run of PLAN_AGREEMENT_DURATION (default 60 s); run alone, as TestAgreement.
func TestOpenAIAgreement(t *testing.T) {
	// A mean TTFT of ~45 ms holds 5% only while the engine's step timers fire on time: on a
	// loaded machine (seen at load average 14: 1 ms timers 4-6 ms late) the comparison
	// measures the machine, as TestAgreement's does, so it skips the same way.
	skipUnlessAgreement(t)
	// PLAN_OPENAI_AGREEMENT_DURATION, where set, wins: make agreement gives this test 30 s
	// (~80 requests at load 0.5) where the others take 10 s per load point, since a mean of
	// 26 requests sits within a few points of the 5% bound on its own.
	dur := time.Minute
	for _, v := range []string{"PLAN_AGREEMENT_DURATION", "PLAN_OPENAI_AGREEMENT_DURATION"} {
		if s := os.Getenv(v); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil {
				t.Fatalf("%s=%q: %v", v, s, err)
			}
			dur = d
		}
	}
	p, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "..", "testdata", "openai", "qlm-plan.json"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	tr := llmTrace(t, llmspec.ClassesOf(p.Provenance.Embedded.Workload), 0.5, dur, 1)
	simTTFT, simE2E, n := simulateTrace(t, p, tr)
	spec, err := workload.TraceSpec("load-0.5", tr)
	if err != nil {
		t.Fatal(err)
	}
	rep, _, err := RunOpenAI(context.Background(), OpenAIOptions{URL: openAIServer(t), Arrival: spec, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d requests over %s at load 0.5: plan load --openai mean TTFT %.2f ms, E2E %.2f ms (p99 %.2f, %.2f; TPOT %.2f ms, ITL p50 %.2f ms); simulator (%d requests) mean TTFT %.2f ms, E2E %.2f ms",
		len(tr.Requests), dur, rep.TTFT.Mean, rep.E2E.Mean, rep.TTFT.P99, rep.E2E.P99, rep.TPOT.Mean, rep.ITL.P50, n, simTTFT, simE2E)
	if rep.Completed != len(tr.Requests) || n != len(tr.Requests) {
		t.Fatalf("completed: load %d, simulator %d, of %d (failures %+v)", rep.Completed, n, len(tr.Requests), rep.Failures)
	}
	// E2E within 5%. TTFT within 5% or one decode step (the client's mean TPOT), whichever is
	// more: run in CI for the first time, on an idle 2-core machine, the client's mean TTFT
	// sat 4.6 ms (10.4%, ~0.4 of a decode step) above the simulator's first-token stamp while
	// E2E agreed within 0.1% (30 s, 97 requests): the first token reaches the client later
	// than the engine model stamps it, by less than a step. A drift past a step fails.
	for _, m := range []struct {
		name      string
		got, want float64
		slackMs   float64
	}{{"mean TTFT", rep.TTFT.Mean, simTTFT, rep.TPOT.Mean}, {"mean E2E", rep.E2E.Mean, simE2E, 0}} {
		if d := math.Abs(m.got - m.want); d > max(0.05*m.want, m.slackMs) {
			t.Errorf("%s: load %.2f ms, simulator %.2f ms: %s%% apart (target 5%%, or %.2f ms: one decode step)", m.name, m.got, m.want,
				strconv.FormatFloat(100*d/m.want, 'f', 1, 64), m.slackMs)
		}
	}
}

// TestLLMTraceFixture: testdata/openai/qlm-load0.5.json is TestOpenAIAgreement's default
// trace (60 s at load 0.5, seed 1), committed so that `plan simulate --trace` and `plan load
// --openai --trace` can replay the same requests from the command line.
func TestLLMTraceFixture(t *testing.T) {
	p, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "..", "testdata", "openai", "qlm-plan.json"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	got := llmTrace(t, llmspec.ClassesOf(p.Provenance.Embedded.Workload), 0.5, time.Minute, 1)
	want, err := formats.ReadInto[*formats.Trace](filepath.Join("..", "..", "testdata", "openai", "qlm-load0.5.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Requests, want.Requests) {
		t.Errorf("the fixture differs from llmTrace's 60 s at load 0.5 (%d vs %d requests): regenerate it", len(want.Requests), len(got.Requests))
	}
}
