package qlm

import (
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
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

func oneClass(model string, slo time.Duration) formats.LLMClass {
	return formats.LLMClass{Name: "c-" + model, Model: model, SLO: formats.Duration(slo), RateRPS: 1,
		InputTokens: formats.TokenProfile{Mean: 100, Std: 50, Max: 1000}, OutputTokens: formats.TokenProfile{Mean: 50, Std: 20, Max: 200}}
}

// TestIterationTimingExact: the emulated instance follows the iteration model to the µs
// (issue 13): three concurrent requests with different prompt and output lengths.
func TestIterationTimingExact(t *testing.T) {
	for _, pol := range []string{PolicyFCFS, PolicyQLM} {
		t.Run(pol, func(t *testing.T) {
			prof := handProfile()
			dep, err := Build([]formats.LLMClass{oneClass("m", time.Minute)}, Setup{Profiles: []formats.LLMProfile{prof}, Instances: []Instance{{Name: "i0", GPU: "A100", Model: "m"}}})
			if err != nil {
				t.Fatal(err)
			}
			type rq struct{ in, out int32 }
			reqs := []rq{{100, 3}, {50, 1}, {200, 2}}
			p, err := Registry().New(dep, dataplane.Config{Policy: pol}, PolicyQLM)
			if err != nil {
				t.Fatal(err)
			}
			done := map[dataplane.ReqID]dataplane.Time{}
			first := map[dataplane.ReqID]dataplane.Time{}
			s, err := sim.New(dep, p, []sim.Source{&sim.Times{T: []dataplane.Time{0, 0, 0}}}, sim.Options{Duration: dataplane.Second,
				Attrs: func(_ dataplane.AppID, n int64) dataplane.Attrs {
					return dataplane.Attrs{InTokens: reqs[n].in, OutTokens: reqs[n].out}
				},
				OnFinish: func(now dataplane.Time, r *dataplane.Request) { done[r.ID], first[r.ID] = now, r.FirstToken-r.Arrival }})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Run(); err != nil {
				t.Fatal(err)
			}
			// By hand. P(n) = 1000 + 10000·(n−1)/999; D(b, ctx) = 5000 + 1000·(b−1) + 0.5·ctx.
			P := func(n int) dataplane.Time { return dataplane.Time(math.Round(1000 + 10000*float64(n-1)/999)) }
			D := func(b, ctx int) dataplane.Time {
				return dataplane.Time(math.Round(5000 + 1000*float64(b-1) + 0.5*float64(ctx)))
			}
			t1 := P(100)             // A arrives first and is prefilled alone: A's first token
			t2 := t1 + P(50+200)     // B and C prefill together: B done (1 token), C's first token
			t3 := t2 + D(2, 101+201) // decode A (ctx 101) and C (ctx 201): C done
			t4 := t3 + D(1, 102)     // decode A: A done
			if t1 != 1991 || t2 != 1991+3492 {
				t.Fatalf("hand arithmetic: t1 %d t2 %d", t1, t2)
			}
			st := p.(*Policy).Stats()
			want := []struct{ ttft, done dataplane.Time }{{t1, t4}, {t2, t2}, {t2, t3}}
			for id, w := range want {
				r := dataplane.ReqID(id)
				if st.TTFT[r] != w.ttft || done[r] != w.done || first[r] != w.ttft {
					t.Errorf("request %d: ttft %d (stamped %d) done %d, want %d %d", id, st.TTFT[r], first[r], done[r], w.ttft, w.done)
				}
			}
			if got := st.TPOT[0]; got != (t4-t1)/2 {
				t.Errorf("TPOT of request 0: %d, want %d", got, (t4-t1)/2)
			}
		})
	}
}

// bundled reads testdata/qlm.
func bundled(t testing.TB) ([]formats.LLMClass, []formats.LLMProfile) {
	dir := filepath.Join("..", "..", "testdata", "qlm")
	w, err := formats.ReadInto[*formats.Workload](filepath.Join(dir, "workload.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pr, err := formats.ReadInto[*formats.Profile](filepath.Join(dir, "profile.json"))
	if err != nil {
		t.Fatal(err)
	}
	return w.LLMClasses, pr.LLMs
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
	for _, ps := range Policies() {
		t.Run(ps.Name, func(t *testing.T) {
			p, err := Registry().New(dep, dataplane.Config{Policy: ps.Name}, PolicyQLM)
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
			n := len(s.Engine.Requests())
			if n == 0 || len(seen) != n {
				t.Fatalf("%d requests, %d finished", n, len(seen))
			}
			for id, c := range seen {
				if c != 1 {
					t.Errorf("request %d finished %d times", id, c)
				}
				if o := s.Engine.Req(id).Outcome; o != dataplane.Completed && o != dataplane.Late {
					t.Errorf("request %d: outcome %v", id, o)
				}
			}
			_ = m
		})
	}
}
