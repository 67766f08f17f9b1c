package qlm

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/sim"
)

// handProfile is the piecewise-linear profile the exact-timing test computes by hand.
func handProfile() formats.LLMProfile {
	return formats.LLMProfile{Model: "m", GPU: "A100", GPUCount: 1, Backend: "import", ParamsB: 7, WeightBytes: 14e9,
		PrefillBaseUs: 1000, PrefillUsPerToken: 10, DecodeUsPerToken: 6000, ThroughputTokensPerS: 5000,
		KVBytesPerToken: 131072, KVCapacityTokens: 100000, AvgBatch: 32, Epsilon: 1, LoadColdUs: 5e6, LoadWarmUs: 1e6,
		Iteration: &formats.LLMIteration{
			Prefill:                 []formats.PWLPoint{{Tokens: 1, Us: 1000}, {Tokens: 1000, Us: 11000}},
			Decode:                  []formats.PWLPoint{{Tokens: 1, Us: 5000}, {Tokens: 4, Us: 8000}},
			DecodeUsPerContextToken: 0.5,
		}}
}

func oneClass(model string, slo time.Duration) llmspec.LLMClass {
	return llmspec.LLMClass{Name: "c-" + model, Model: model, SLO: formats.Duration(slo), RateRPS: 1,
		InputTokens: llmspec.TokenProfile{Mean: 100, Std: 50, Max: 1000}, OutputTokens: llmspec.TokenProfile{Mean: 50, Std: 20, Max: 200}}
}

// TestIterationTimingExact: the emulated instance follows the engine model to the µs: three requests arriving together share one step (their prompts are
// prefilled together), with the output delay of 0 and 1 step.
func TestIterationTimingExact(t *testing.T) {
	// By hand. Prefill-containing step over n tokens: P(n) = 1000 + 10000·(n−1)/999; decode
	// step over b tokens: D(b) = 5000 + 1000·(b−1); plus 0.5 µs per context token. The
	// arrivals at 0 start one step at 1 µs (the arrival hold).
	P := func(n int) dataplane.Time { return dataplane.Time(math.Round(1000 + 10000*float64(n-1)/999)) }
	D := func(b int) dataplane.Time { return dataplane.Time(1000 * (b + 4)) }
	ctx := func(n int) dataplane.Time { return dataplane.Time(math.Round(0.5 * float64(n))) }
	e1 := 1 + P(350) + ctx(350)    // A, B, C prefill (350 tokens): every first token; B done
	e2 := e1 + D(2) + ctx(101+201) // A and C decode: C done
	e3 := e2 + D(1) + ctx(102)     // A decodes: A done; nothing follows
	e4 := e3 + D(1) + ctx(103)     // the output-only step after it (llm.Engine.OutputStep)
	if e1 != 4669 || e2 != 10820 || e3 != 15871 || e4 != 20923 {
		t.Fatalf("hand arithmetic: %d %d %d %d", e1, e2, e3, e4)
	}
	type want struct{ ttft, done dataplane.Time }
	for _, tc := range []struct {
		delay int
		want  []want
	}{
		// Stamped at the end of the step that computed them.
		{0, []want{{e1, e3}, {e1, e1}, {e1, e2}}},
		// One step later; A's last token has no next step: the idle instance's output-only
		// step delivers it, one decode after the one before it (TPOT = the step time).
		{1, []want{{e2, e4}, {e2, e2}, {e2, e3}}},
	} {
		for _, pol := range []string{PolicyFCFS, PolicyQLM} {
			t.Run(fmt.Sprintf("%s/delay=%d", pol, tc.delay), func(t *testing.T) {
				prof := handProfile()
				d := tc.delay
				prof.Engine = &formats.LLMEngine{OutputDelaySteps: &d}
				r := runEngine(t, pol, prof, []engineReq{{0, 100, 3, 0}, {0, 50, 1, 0}, {0, 200, 2, 0}})
				first, done, st := r.first, r.done, r.st
				for id, w := range tc.want {
					r := dataplane.ReqID(id)
					if first[r] != w.ttft || done[r] != w.done || st.TTFT[r] != w.ttft {
						t.Errorf("request %d: ttft %d (stats %d) done %d, want %d %d", id, first[r], st.TTFT[r], done[r], w.ttft, w.done)
					}
				}
				if got := st.TPOT[0]; got != (tc.want[0].done-tc.want[0].ttft)/2 {
					t.Errorf("TPOT of request 0: %d, want %d", got, (tc.want[0].done-tc.want[0].ttft)/2)
				}
			})
		}
	}
}

// engineReq is one request of a hand-computed schedule: arrival (µs), prompt and output.
type engineReq struct {
	at      dataplane.Time
	in, out int32
	// prio is the request's priority (lower first under scheduling_policy priority).
	prio int32
}

// engineRun is what runEngine saw: each request's first-token and finish times from its
// arrival, the drop reasons, and the policy's stats.
type engineRun struct {
	first, done map[dataplane.ReqID]dataplane.Time
	reason      map[dataplane.ReqID]dataplane.DropReason
	st          *Stats
	// m are the run's metrics (the LLM engine summary among them).
	m *sim.Metrics
}

// runEngine replays reqs through one instance of prof under policy pol.
func runEngine(t *testing.T, pol string, prof formats.LLMProfile, reqs []engineReq) engineRun {
	t.Helper()
	dep, err := Build([]llmspec.LLMClass{oneClass("m", time.Hour)}, Setup{Profiles: []formats.LLMProfile{prof}, Instances: []Instance{{Name: "i0", GPU: prof.GPU, Model: "m"}}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Registry().New(dep, dataplane.Config{Policy: pol}, PolicyQLM)
	if err != nil {
		t.Fatal(err)
	}
	var at []dataplane.Time
	for _, r := range reqs {
		at = append(at, r.at)
	}
	first, done := map[dataplane.ReqID]dataplane.Time{}, map[dataplane.ReqID]dataplane.Time{}
	reason := map[dataplane.ReqID]dataplane.DropReason{}
	s, err := sim.New(dep, p, []sim.Source{&sim.Times{T: at}}, sim.Options{Duration: dataplane.Second,
		Attrs: func(_ dataplane.AppID, n int64) dataplane.Attrs {
			return dataplane.Attrs{InTokens: reqs[n].in, OutTokens: reqs[n].out, Priority: reqs[n].prio}
		},
		OnFinish: func(now dataplane.Time, r *dataplane.Request) {
			done[r.ID] = now - r.Arrival
			if r.Outcome == dataplane.Dropped {
				reason[r.ID] = r.Reason()
			}
			if r.FirstToken != dataplane.Never {
				first[r.ID] = r.FirstToken - r.Arrival
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.Run()
	if err != nil {
		t.Fatal(err)
	}
	return engineRun{first, done, reason, p.(*Policy).Stats(), m}
}

// bundled reads testdata/qlm.
func bundled(t testing.TB) ([]llmspec.LLMClass, []formats.LLMProfile) {
	dir := filepath.Join("..", "..", "testdata", "qlm")
	w, err := formats.ReadInto[*formats.Workload](filepath.Join(dir, "workload.yaml"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	pr, err := formats.ReadInto[*formats.Profile](filepath.Join(dir, "profile.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return llmspec.ClassesOf(w), pr.LLMs
}

// TestEveryRequestFinishesOnce runs every policy on the bundled example at overload with
// model switching and checks each request reaches exactly one outcome.
func TestEveryRequestFinishesOnce(t *testing.T) {
	cls, profs := bundled(t)
	dep, err := Build(cls, Setup{Profiles: profs, Instances: []Instance{{Name: "i0", GPU: "A100", Model: "mistral-7b"}, {Name: "i1", GPU: "A100", Model: "vicuna-13b"}},
		SolveMs: 20, MaxBinaries: 300})
	if err != nil {
		t.Fatal(err)
	}
	// The paper's policies admit everything: each request completes (on time or late). With
	// admission (the default) a request may instead be refused at arrival as
	// would-finish-late, and nothing else.
	for _, ps := range Policies() {
		for _, admit := range []string{"all", "predict"} {
			t.Run(ps.Name+"/admit="+admit, func(t *testing.T) {
				p, err := Registry().New(dep, dataplane.Config{Policy: ps.Name, Params: map[string]string{"admit": admit}}, PolicyQLM)
				if err != nil {
					t.Fatal(err)
				}
				var srcs []sim.Source
				for a := range dep.Apps {
					spec, _ := sim.ParseArrival("poisson")
					src, err := spec.New(dep.Apps[a].RateRPS*3, dep.Apps[a].Name, uint64(a+7))
					if err != nil {
						t.Fatal(err)
					}
					srcs = append(srcs, src)
				}
				seen := map[dataplane.ReqID]int{}
				s, err := sim.New(dep, p, srcs, sim.Options{Duration: 10 * dataplane.Second, Seed: 3,
					OnFinish: func(_ dataplane.Time, r *dataplane.Request) { seen[r.ID]++ }})
				if err != nil {
					t.Fatal(err)
				}
				m, err := s.Run()
				if err != nil {
					t.Fatal(err)
				}
				n := s.Engine.HeldRequests()
				if n == 0 || len(seen) != n {
					t.Fatalf("%d requests, %d finished", n, len(seen))
				}
				for id, c := range seen {
					if c != 1 {
						t.Errorf("request %d finished %d times", id, c)
					}
					r := s.Engine.Req(id)
					if o := r.Outcome; o != dataplane.Completed && o != dataplane.Late && (admit == "all" || r.Reason() != DropWouldBeLate) {
						t.Errorf("request %d: outcome %v (%s)", id, o, r.Reason())
					}
				}
				_ = m
			})
		}
	}
}
