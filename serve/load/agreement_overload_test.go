package load

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	dq "github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/intree"
)

// overloadTol is the bound of TestOpenAIAgreementOverload: the share of offered requests
// answered within their SLO (goodput over the offered rate) within 5 points between serve
// and simulate.
const overloadTol = 0.05

// skipUnlessAgreement skips a wall-clock agreement run where its numbers would measure the
// machine rather than the executor: under -short, without PLAN_AGREEMENT=1 (make agreement
// sets it on free cores), under the race detector, and when 1 ms timers fire over 2 ms late.
func skipUnlessAgreement(t *testing.T) {
	t.Helper()
	if testing.Short() || os.Getenv("PLAN_AGREEMENT") != "1" {
		t.Skip("set PLAN_AGREEMENT=1 to run (make agreement does, on an otherwise idle machine)")
	}
	if raceEnabled {
		t.Skip("the race detector slows the HTTP path by an order of magnitude; timing agreement is meaningless under it")
	}
	if l := timerLateness(); l > 2*time.Millisecond {
		t.Skipf("this machine is too loaded for a wall-clock comparison: 1 ms timers fire %v late (p95)", l)
	}
}

// qlmOverloadFactor is TestOpenAIAgreementOverload's load on the bundled QLM plan: 16× its
// classes' rates, about three times what its instances serve within the chat SLO (at 6× 97%
// of the chat requests still meet it, at 10× 59%).
const qlmOverloadFactor = 16.0

// qlmOffsetsMs are the start offsets the simulator's side of TestOpenAIAgreementOverload
// replays the trace at. Under this overload QLM's plan generator meets near-ties between
// request groups of one model (the same deadlines, costs a float rounding apart) whose
// order decides which group meets the chat SLO: shifting the whole trace by a few hundred
// ms — the time between a server's start and its first request, which no run controls —
// flips some of them (chat goodput 66% at shifts of 0-333 ms, 58% at 592 and 925 ms,
// measured). Serve is one such realization, so it is judged against their mean.
var qlmOffsetsMs = []int64{0, 111, 222, 333, 444, 555, 666, 777, 888}

// TestOpenAIAgreementOverload: the bundled QLM plan (testdata/openai/qlm-plan.json) at
// qlmOverloadFactor × its classes' rates for PLAN_OPENAI_OVERLOAD_DURATION (default 15 s),
// `plan load --openai` against `plan serve`, and the simulator on the same trace
// (per-request tokens), agree on goodput within 5 points: the share of the trace's requests
// whose end-to-end latency, as the client measures it, is within their class's SLO (a failed
// or refused request meets none), against the mean of the simulator's realizations at the
// offsets of qlmOffsetsMs. Each class's share is logged beside it.
func TestOpenAIAgreementOverload(t *testing.T) {
	skipUnlessAgreement(t)
	dur := 15 * time.Second
	if s := os.Getenv("PLAN_OPENAI_OVERLOAD_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("PLAN_OPENAI_OVERLOAD_DURATION=%q: %v", s, err)
		}
		dur = d
	}
	p, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "..", "testdata", "openai", "qlm-plan.json"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	classes := llmspec.ClassesOf(p.Provenance.Embedded.Workload)
	slo := map[string]time.Duration{}
	for _, c := range classes {
		slo[c.Name] = c.SLO.D()
	}
	tr := llmTrace(t, classes, qlmOverloadFactor, dur, 1)
	offered := map[string]int{}
	for _, r := range tr.Requests {
		offered[r.Target]++
	}
	n := float64(len(tr.Requests))

	dep, err := dq.FromPlan(p)
	if err != nil {
		t.Fatal(err)
	}
	simMet := map[string]float64{} // mean over the offsets
	var want float64
	for _, off := range qlmOffsetsMs {
		shifted := *tr
		shifted.Requests = slices.Clone(tr.Requests)
		for i := range shifted.Requests {
			shifted.Requests[i].TimeUs += off * 1000
		}
		met, refused := map[string]int{}, 0
		simulatePolicy(t, p, &shifted, func(now dataplane.Time, r *dataplane.Request) {
			// A request refused at arrival (admission by prediction) finishes too, at once,
			// as Dropped: it met no SLO, as serve's 429 meets none.
			name := dep.Apps[r.App].Name
			if r.Outcome == dataplane.Dropped {
				refused++
			}
			if r.Outcome != dataplane.Dropped && time.Duration(now-r.Arrival)*time.Microsecond <= slo[name] {
				met[name]++
			}
		})
		total := 0
		for name, k := range met {
			simMet[name] += float64(k) / float64(len(qlmOffsetsMs))
			total += k
		}
		t.Logf("simulate at offset %d ms: goodput share %.2f%% %v (%d refused)", off, 100*float64(total)/n, met, refused)
		want += float64(total) / n / float64(len(qlmOffsetsMs))
	}

	spec, err := workload.TraceSpec("overload", tr)
	if err != nil {
		t.Fatal(err)
	}
	_, samples, err := RunOpenAI(context.Background(), OpenAIOptions{URL: openAIServer(t), Arrival: spec, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	serveMet := map[string]int{}
	failed, vm := 0, 0
	for _, s := range samples {
		if !s.OK {
			failed++
			continue
		}
		if s.E2E <= slo[s.Model] {
			serveMet[s.Model]++
			vm++
		}
	}
	for _, c := range classes {
		if k := offered[c.Name]; k > 0 {
			t.Logf("%s (SLO %v): %d offered; within SLO: serve %.2f%%, simulate %.2f%% (mean)", c.Name, slo[c.Name], k,
				100*float64(serveMet[c.Name])/float64(k), 100*simMet[c.Name]/float64(k))
		}
	}
	got := float64(vm) / n
	t.Logf("%d requests over %v at %g× the plan's rates: goodput share serve %.2f%% (%d failed), simulate %.2f%% (mean of %d offsets)",
		len(tr.Requests), dur, qlmOverloadFactor, 100*got, failed, 100*want, len(qlmOffsetsMs))
	if d := math.Abs(got - want); d > overloadTol {
		t.Errorf("goodput differs by %.2f points at %g× (serve %.2f%%, simulate %.2f%%): target %g", 100*d, qlmOverloadFactor, 100*got, 100*want, 100*overloadTol)
	}
}
