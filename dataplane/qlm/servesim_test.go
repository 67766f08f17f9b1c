package qlm

import (
	"path/filepath"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/sim"
)

// TestFiveTraceArrivalSpread: on the bundled QLM plan the five-request trace of `plan
// simulate --trace` (cmd/plan/internal/cli/testdata/llm/five.json) gives the same first
// tokens whether its two requests at t = 0 arrive in the same instant (the simulator) or tens
// of µs apart (plan serve, where the load client's requests reach the server one by one). The
// vicuna-chat request at 1 s got its first token after 14 s when served: the mistral-batch
// request 50 µs after the chat one was placed on vicuna's idle instance, which started an
// 11.8 s cold swap (placement ignored the group's own model load) and then swapped back.
func TestFiveTraceArrivalSpread(t *testing.T) {
	pl, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "..", "testdata", "export", "qlm", "plan.json"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	dep, err := FromPlan(pl)
	if err != nil {
		t.Fatal(err)
	}
	idx := map[string]dataplane.AppID{}
	for i, a := range dep.Apps {
		idx[a.Name] = dataplane.AppID(i)
	}
	type rq struct {
		at      dataplane.Time
		class   string
		in, out int32
	}
	five := func(spread dataplane.Time) []rq {
		return []rq{{0, "mistral-chat", 100, 10}, {spread, "mistral-batch", 1000, 200}, {500000, "mistral-chat", 100, 10},
			{1000000, "vicuna-chat", 1000, 200}, {1500000 + spread, "mistral-batch", 2000, 1000}}
	}
	run := func(reqs []rq) (map[dataplane.ReqID]dataplane.Time, *Stats) {
		p, err := Registry().New(dep, dataplane.Config{Policy: PolicyQLM}, PolicyQLM)
		if err != nil {
			t.Fatal(err)
		}
		srcs := make([]sim.Source, len(dep.Apps))
		byApp := make([][]rq, len(dep.Apps))
		for _, r := range reqs {
			a := idx[r.class]
			byApp[a] = append(byApp[a], r)
		}
		for a := range srcs {
			var ts []dataplane.Time
			for _, r := range byApp[a] {
				ts = append(ts, r.at)
			}
			srcs[a] = &sim.Times{T: ts}
		}
		ttft := map[dataplane.ReqID]dataplane.Time{}
		key := map[dataplane.ReqID]int{}
		s, err := sim.New(dep, p, srcs, sim.Options{Duration: 30 * dataplane.Second,
			Attrs: func(a dataplane.AppID, n int64) dataplane.Attrs {
				r := byApp[a][n]
				return dataplane.Attrs{InTokens: r.in, OutTokens: r.out}
			},
			OnFinish: func(_ dataplane.Time, r *dataplane.Request) {
				if r.FirstToken == dataplane.Never {
					t.Errorf("request %d (%s) has no first token", r.ID, dep.Apps[r.App].Name)
					return
				}
				// Key by trace row: the arrival time orders the rows.
				for i, x := range reqs {
					if x.at == r.Arrival && idx[x.class] == r.App {
						key[r.ID] = i
					}
				}
				ttft[dataplane.ReqID(key[r.ID])] = r.FirstToken - r.Arrival
			}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Run(); err != nil {
			t.Fatal(err)
		}
		if len(ttft) != len(reqs) {
			t.Fatalf("%d of %d requests finished", len(ttft), len(reqs))
		}
		return ttft, p.(*Policy).Stats()
	}
	base, _ := run(five(0))
	for _, spread := range []dataplane.Time{1, 50, 300, 2000} {
		got, st := run(five(spread))
		if st.ModelSwaps != 0 {
			t.Errorf("spread %d µs: %d model swaps, want none (each instance holds its model)", spread, st.ModelSwaps)
		}
		for row, w := range base {
			// Within one step: the second request misses the first one's step at most.
			if d := got[row] - w; d > 20*dataplane.Millisecond || d < -20*dataplane.Millisecond {
				t.Errorf("spread %d µs: row %d first token after %d µs, same-instant %d µs", spread, row, got[row], w)
			}
		}
	}
}
