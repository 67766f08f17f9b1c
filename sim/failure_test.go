package sim

import (
	"fmt"
	"strings"
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// TestWorkerFailure: a worker that fails mid-run loses the batches it ran and held (their
// other hops and transfers are cancelled), its requests are dropped as worker-failed (PPipe
// and the reactive baseline do not fail over), nothing runs on it while it is down, it runs
// again once back, and every request still reaches exactly one outcome — with compaction too.
func TestWorkerFailure(t *testing.T) {
	const at, until = 500 * ms, 1200 * ms
	for _, plan := range []string{"mixed.json", "nic.json"} {
		for _, pol := range []string{"ppipe", "reactive"} {
			for _, compact := range []int64{0, 64} {
				t.Run(fmt.Sprintf("%s/%s/compact%d", plan, pol, compact), func(t *testing.T) {
					dep := loadDep(t, plan)
					p, err := newTestPolicy(dataplane.Config{Policy: pol})
					if err != nil {
						t.Fatal(err)
					}
					spec, _ := ParseArrival("poisson")
					src, _ := spec.New(dep.Apps[0].RateRPS*0.9, dep.Apps[0].Name, 3)
					w := dep.Stages[0].Pool[0]
					finished := map[dataplane.ReqID]int{}
					var failed int
					s, err := New(dep, p, []Source{src}, Options{Duration: 2 * dataplane.Second, Seed: 1, CompactEvery: compact,
						Failures: []Failure{{Worker: w, At: at, Until: until}},
						OnFinish: func(_ dataplane.Time, r *dataplane.Request) {
							finished[r.ID]++
							if r.Reason() == dataplane.DropWorkerFailed {
								failed++
								if r.Done < at || r.Done >= until {
									t.Errorf("request %d dropped as worker-failed at %d µs, outside the failure", r.ID, r.Done)
								}
							}
						}})
					if err != nil {
						t.Fatal(err)
					}
					if _, err := s.Run(); err != nil {
						t.Fatal(err)
					}
					n := int(s.Engine.NextRequestID())
					if len(finished) != n {
						t.Fatalf("%d of %d requests finished", len(finished), n)
					}
					for id, k := range finished {
						if k != 1 {
							t.Fatalf("request %d finished %d times", id, k)
						}
					}
					if failed == 0 {
						t.Error("no request dropped as worker-failed: the failure hit nothing")
					}
					if compact > 0 {
						return // batches are forgotten; the timeline checks need them all
					}
					after := false
					for _, b := range s.Engine.Batches() {
						for i, h := range b.Hops {
							if b.Lost {
								continue
							}
							if h.Start < 0 {
								t.Fatalf("batch %d hop %d never ran", b.ID, i)
							}
							if h.Worker == w && h.End > at && h.Start < until {
								t.Errorf("batch %d hop %d ran on the failed worker at [%d, %d)", b.ID, i, h.Start, h.End)
							}
							after = after || (h.Worker == w && h.Start >= until)
						}
					}
					if !after {
						t.Error("the worker ran nothing after it came back")
					}
				})
			}
		}
	}
}

func TestParseFailure(t *testing.T) {
	dep := &dataplane.Deployment{}
	dep.Topo.Workers = []dataplane.Worker{{Name: "i0"}, {Name: "i1"}, {Name: "m@gpu[0]"}}
	for _, tc := range []struct {
		in   string
		want Failure
		err  string
	}{
		{in: "i1@30s", want: Failure{Worker: 1, At: 30 * dataplane.Second}},
		{in: "i0@1m-1m30s", want: Failure{Worker: 0, At: 60 * dataplane.Second, Until: 90 * dataplane.Second}},
		{in: "i0@0s", want: Failure{Worker: 0}},
		{in: "m@gpu[0]@2s-3s", want: Failure{Worker: 2, At: 2 * dataplane.Second, Until: 3 * dataplane.Second}},
		{in: "i2@1s", err: `no worker "i2" in the plan; workers are i0, i1, m@gpu[0]`},
		{in: "i0", err: "want WORKER@AT"},
		{in: "@1s", err: "want WORKER@AT"},
		{in: "i0@soon", err: `failure time "soon"`},
		{in: "i0@-1s", err: `failure time ""`},
		{in: "i0@5s-2s", err: `recovery time "2s"`},
		{in: "i0@5s-x", err: `recovery time "x"`},
	} {
		got, err := ParseFailure(tc.in, dep)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseFailure(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseFailure(%q) = %+v, %v; want an error containing %q", tc.in, got, err, tc.err)
		}
	}
}
