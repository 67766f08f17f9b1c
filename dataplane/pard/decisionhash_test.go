package pard_test

import (
	"encoding/binary"
	"fmt"
	"hash"
	"hash/fnv"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/pard"
	"github.com/plan-dev/plan/sim"
)

// decisionHasher folds every event the policy handles and every decision it makes into one
// FNV-64a hash (Engine.Observe): two runs with the same hash made the same decisions.
type decisionHasher struct {
	h   hash.Hash64
	buf []byte
}

func newDecisionHasher() *decisionHasher { return &decisionHasher{h: fnv.New64a()} }

func (d *decisionHasher) i(v int64) { d.buf = binary.LittleEndian.AppendUint64(d.buf, uint64(v)) }

func (d *decisionHasher) observe(now dataplane.Time, ev *dataplane.Event, ds []dataplane.Decision) {
	d.buf = d.buf[:0]
	d.i(int64(now))
	d.i(int64(ev.Kind))
	d.i(int64(ev.Req))
	d.i(int64(ev.Batch))
	d.i(int64(ev.Hop))
	d.i(int64(ev.Stage))
	d.i(int64(ev.Worker))
	d.i(ev.Key)
	for _, x := range ds {
		d.i(int64(x.Kind))
		d.i(int64(x.App))
		d.i(int64(x.Req))
		d.i(int64(x.Stage))
		d.buf = append(d.buf, x.Reason...)
		d.i(int64(x.Estimate))
		d.i(int64(x.At))
		d.i(x.Key)
		d.i(int64(x.Worker))
		d.buf = append(d.buf, x.Model...)
		d.i(x.Bytes)
		for _, r := range x.Reqs {
			d.i(int64(r))
		}
		for _, p := range x.Path {
			d.i(int64(p.Stage))
			d.i(int64(p.Worker))
			d.i(int64(p.ResStart))
			d.i(int64(p.OutStart))
			d.i(int64(p.Dur))
		}
	}
	d.h.Write(d.buf)
}

// scaleRun is one BenchmarkSimScale point: policy pol on the k× pipeline at load 0.9 for
// 10 simulated seconds; compact > 0 compacts the engine every that many events.
func scaleRun(tb testing.TB, pol string, k int, compact int64) *sim.Sim {
	tb.Helper()
	dep := scaledPipeline(tb, k, 0.9)
	p, err := pard.NewPolicy(dataplane.Config{Policy: pol})
	if err != nil {
		tb.Fatal(err)
	}
	src, err := sim.ArrivalSpec{Kind: "poisson"}.New(dep.Apps[0].RateRPS, dep.Apps[0].Name, 1)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := sim.New(dep, p, []sim.Source{src}, sim.Options{Duration: 10 * dataplane.Second, Seed: 1, CompactEvery: compact})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// TestSimScaleDecisionHash runs BenchmarkSimScale's points once each (and the 16-worker
// points again with engine compaction) and checks the decision-stream hash against the one
// recorded before the cancel/forget change (issue 29 item 1): a refactor of the policy's
// state must not change a single decision.
func TestSimScaleDecisionHash(t *testing.T) {
	// Recorded at e3a0a60, before PARD's policies handled EvCancel and Forget.
	want := map[string]string{}
	for _, pol := range []string{"pard", "none"} {
		for _, k := range []int{1, 4, 16} {
			for _, compact := range []int64{0, 1 << 12} {
				if compact > 0 && k > 1 {
					continue
				}
				name := fmt.Sprintf("%s/k=%d/compact=%d", pol, k, compact)
				t.Run(name, func(t *testing.T) {
					s := scaleRun(t, pol, k, compact)
					h := newDecisionHasher()
					s.Engine.Observe(h.observe)
					if _, err := s.Run(); err != nil {
						t.Fatal(err)
					}
					got := fmt.Sprintf("%016x", h.h.Sum64())
					t.Logf("%s: hash %s events %d", name, got, s.Engine.Events())
					if w := want[name]; w != got {
						t.Errorf("%s: decision hash %s, want %s", name, got, w)
					}
				})
			}
		}
	}
}
