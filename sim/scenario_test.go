package sim

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	dpppipe "github.com/plan-dev/plan/dataplane/ppipe"
	"github.com/plan-dev/plan/formats/sections/intree"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
)

func loadDep(t testing.TB, name string) *dataplane.Deployment {
	t.Helper()
	p, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "testdata", "sim", name), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	d, err := dpppipe.FromPlan(p)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// timeline renders every batch and request of a finished run, one per line, in ms.
func timeline(s *Sim) string {
	var b strings.Builder
	dep := s.Engine.Deployment()
	ms := func(t dataplane.Time) string { return fmt.Sprintf("%g", float64(t)/1000) }
	for _, bt := range s.Engine.Batches() {
		fmt.Fprintf(&b, "batch %d %v:", bt.ID, bt.Reqs)
		for _, h := range bt.Hops {
			fmt.Fprintf(&b, " %s %s-%s", dep.Topo.Workers[h.Worker].Name, ms(h.Start), ms(h.End))
			if h.OutStart >= 0 {
				fmt.Fprintf(&b, " xfer %s-%s", ms(h.OutStart), ms(h.OutEnd))
			}
		}
		b.WriteString("\n")
	}
	for _, r := range s.Engine.Requests() {
		fmt.Fprintf(&b, "r%d %s", r.ID, r.Outcome)
		if r.Outcome == dataplane.Dropped {
			fmt.Fprintf(&b, " (%s) at %s\n", r.Reason(), ms(r.Done))
		} else {
			fmt.Fprintf(&b, " at %s\n", ms(r.Done))
		}
	}
	return b.String()
}

func runScenario(t *testing.T, plan, policy string, arrivals []dataplane.Time) *Sim {
	t.Helper()
	dep := loadDep(t, plan)
	pol, err := newTestPolicy(dataplane.Config{Policy: policy})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(dep, pol, []Source{&Times{T: arrivals}}, Options{Duration: dataplane.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(); err != nil {
		t.Fatal(err)
	}
	return s
}

const ms = dataplane.Millisecond

func TestScenarios(t *testing.T) {
	cases := []struct {
		name, plan, policy string
		arrivals           []dataplane.Time
		want               string
	}{{
		// One L4, batch 2 (8 ms at b=1, 10 ms at b=2), SLO 25 ms. r0 waits for a partner
		// (timer at 15.001 ms) and r1 arrives first; r2 waits until its timer (19.001 ms:
		// the last instant a batch of 2 could still have started) and goes alone; of the
		// burst r3..r5 the first two share a batch and r5 cannot make it; r6+r7 fill a batch.
		name: "one-gpu", plan: "one-gpu.json", policy: "ppipe",
		arrivals: []dataplane.Time{0, 3 * ms, 4 * ms, 20 * ms, 20 * ms, 20 * ms, 30 * ms, 30500},
		want: `batch 0 [0 1]: L4#0 3-13
batch 1 [2]: L4#0 19.001-27.001
batch 2 [3 4]: L4#0 27.001-37.001
batch 3 [6 7]: L4#0 37.001-47.001
r0 completed at 13
r1 completed at 13
r2 completed at 27.001
r3 completed at 37.001
r4 completed at 37.001
r5 dropped (deadline) at 20
r6 completed at 47.001
r7 completed at 47.001
`,
	}, {
		// Two P4 behind one NIC (4 ms per sample) feed one L4: the uplink is the bottleneck,
		// so completions come every 4 ms; r7..r9 would finish at 41 ms > 40 ms and are
		// dropped at once. Ties between the P4s go to the first in pool order.
		name: "nic-bottleneck", plan: "nic.json", policy: "ppipe",
		arrivals: []dataplane.Time{0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		want: `batch 0 [0]: P4#1 0-6 xfer 6-10 L4#0 10-13
batch 1 [1]: P4#2 0-6 xfer 10-14 L4#0 14-17
batch 2 [2]: P4#1 6-12 xfer 14-18 L4#0 18-21
batch 3 [3]: P4#1 12-18 xfer 18-22 L4#0 22-25
batch 4 [4]: P4#2 6-12 xfer 22-26 L4#0 26-29
batch 5 [5]: P4#1 18-24 xfer 26-30 L4#0 30-33
batch 6 [6]: P4#1 24-30 xfer 30-34 L4#0 34-37
r0 completed at 13
r1 completed at 17
r2 completed at 21
r3 completed at 25
r4 completed at 29
r5 completed at 33
r6 completed at 37
r7 dropped (deadline) at 0
r8 dropped (deadline) at 0
r9 dropped (deadline) at 0
`,
	}, {
		// A burst behind two full batches: r4 first reaches the head at 4 ms when only a
		// batch of 1 fits its deadline; the admission refinement drops it (the oldest) so
		// that r5 and r6 share a full batch and both make it.
		name: "burst-drops-oldest", plan: "one-gpu.json", policy: "ppipe",
		arrivals: []dataplane.Time{0, 0, 0, 0, 4 * ms, 5 * ms, 6 * ms},
		want: `batch 0 [0 1]: L4#0 0-10
batch 1 [2 3]: L4#0 10-20
batch 2 [5 6]: L4#0 20-30
r0 completed at 10
r1 completed at 10
r2 completed at 20
r3 completed at 20
r4 dropped (admission) at 4
r5 completed at 30
r6 completed at 30
`,
	}, {
		// The same burst under Algorithm 1 as printed (no admission): r4 goes alone and
		// both newer requests miss.
		name: "burst-paper", plan: "one-gpu.json", policy: "ppipe-paper",
		arrivals: []dataplane.Time{0, 0, 0, 0, 4 * ms, 5 * ms, 6 * ms},
		want: `batch 0 [0 1]: L4#0 0-10
batch 1 [2 3]: L4#0 10-20
batch 2 [4]: L4#0 20-28
r0 completed at 10
r1 completed at 10
r2 completed at 20
r3 completed at 20
r4 completed at 28
r5 dropped (deadline) at 5
r6 dropped (deadline) at 6
`,
	}, {
		// The reactive baseline on the NIC bottleneck: nothing is reserved, so all ten
		// requests run on the P4s and queue for the uplink (FIFO, 4 ms each); r7..r9 reach
		// the L4 too late and are dropped there, after 6 ms of P4 time each (wasted).
		name: "nic-reactive", plan: "nic.json", policy: "reactive",
		arrivals: []dataplane.Time{0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		want: `batch 0 [0]: P4#1 0-6 xfer 6-10
batch 1 [1]: P4#2 0-6 xfer 10-14
batch 2 [2]: P4#1 6-12 xfer 14-18
batch 3 [3]: P4#2 6-12 xfer 18-22
batch 4 [4]: P4#1 12-18 xfer 22-26
batch 5 [5]: P4#2 12-18 xfer 26-30
batch 6 [6]: P4#1 18-24 xfer 30-34
batch 7 [7]: P4#2 18-24 xfer 34-38
batch 8 [8]: P4#1 24-30 xfer 38-42
batch 9 [9]: P4#2 24-30 xfer 42-46
batch 10 [0]: L4#0 10-13
batch 11 [1]: L4#0 14-17
batch 12 [2]: L4#0 18-21
batch 13 [3]: L4#0 22-25
batch 14 [4]: L4#0 26-29
batch 15 [5]: L4#0 30-33
batch 16 [6]: L4#0 34-37
r0 completed at 13
r1 completed at 17
r2 completed at 21
r3 completed at 25
r4 completed at 29
r5 completed at 33
r6 completed at 37
r7 dropped (deadline) at 38
r8 dropped (deadline) at 42
r9 dropped (deadline) at 46
`,
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := runScenario(t, c.plan, c.policy, c.arrivals)
			if c.policy == "reactive" {
				for _, r := range s.Engine.Requests()[7:] {
					if r.WorkGPU != 6000 || r.DropStage != 1 {
						t.Errorf("r%d: wasted %g GPU-µs at stage %d, want 6000 at stage 1", r.ID, r.WorkGPU, r.DropStage)
					}
				}
			}
			if got := timeline(s); got != c.want {
				t.Errorf("timeline:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}
}

func TestRequestTrace(t *testing.T) {
	s := runScenario(t, "nic.json", "ppipe", []dataplane.Time{0, 0})
	got := fmt.Sprint(s.Engine.Trace(1))
	// r1: P4 #2 (worker 1) 0–6 ms, transfer 10–14 ms (behind r0's), L4 (worker 2) 14–17 ms.
	want := "[{0 1 1 1 0 6000 10000 14000} {1 2 1 1 14000 17000 -1 -1}]"
	if got != want {
		t.Errorf("trace %s, want %s", got, want)
	}
}
