package qlm

import (
	"encoding/binary"
	"fmt"
	"hash"
	"hash/fnv"
	"os"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/sim"
)

// decisionHasher folds every event the policy handles and every decision it makes into one
// FNV-64a hash (Engine.Observe): two runs with the same hash made the same decisions.
type decisionHasher struct {
	h   hash.Hash64
	buf []byte
}

func (d *decisionHasher) i(v int64) { d.buf = binary.LittleEndian.AppendUint64(d.buf, uint64(v)) }

func (d *decisionHasher) observe(now dataplane.Time, ev *dataplane.Event, ds []dataplane.Decision) {
	d.buf = d.buf[:0]
	for _, v := range []int64{int64(now), int64(ev.Kind), int64(ev.Req), int64(ev.Batch), int64(ev.Hop), int64(ev.Stage), int64(ev.Worker), ev.Key} {
		d.i(v)
	}
	for _, x := range ds {
		if x.Kind == dataplane.DFirstToken {
			continue // a record of when a token reached its client, not a scheduling decision
		}
		for _, v := range []int64{int64(x.Kind), int64(x.App), int64(x.Req), int64(x.Stage), int64(x.Estimate), int64(x.At), x.Key, int64(x.Worker), x.Bytes} {
			d.i(v)
		}
		d.buf = append(d.buf, x.Reason...)
		d.buf = append(d.buf, x.Model...)
		for _, r := range x.Reqs {
			d.i(int64(r))
		}
		for _, p := range x.Path {
			for _, v := range []int64{int64(p.Stage), int64(p.Worker), int64(p.ResStart), int64(p.OutStart), int64(p.Dur)} {
				d.i(v)
			}
		}
	}
	d.h.Write(d.buf)
}

// TestSimScaleDecisionHash runs BenchmarkSimScale's points (the 128-instance ones with
// PLAN_SCALE_HASH_FULL=1), with and without engine compaction (which calls Forget), and
// checks the decision-stream hash against the recorded one: compaction (Forget) and anything
// that does not mean to change the schedule must not change a single decision.
func TestSimScaleDecisionHash(t *testing.T) {
	// Recorded with the current engine model (chunked prefill, mixed steps, the
	// output delay): the schedule changed by design; before it, at e3a0a60. QLM at 8 and 32
	// instances re-recorded when placement counted the group's own model swap.
	// Re-recorded when an idle instance's outputs came to wait for its output-only step
	// (dataplane/llm/outputstep.go): every completion on an instance going idle is a decode
	// step later.
	want := map[string]string{
		"qlm/instances=8/compact=false":             "c4d0103d3bb5f8d7",
		"qlm/instances=8/compact=true":              "c4d0103d3bb5f8d7",
		"qlm/instances=32/compact=false":            "62aa23530cd6d098",
		"qlm/instances=32/compact=true":             "62aa23530cd6d098",
		"qlm/instances=128/compact=false":           "052b3f85effe869a",
		"qlm/instances=128/compact=true":            "052b3f85effe869a",
		"qlm-vllm-fcfs/instances=8/compact=false":   "84c186b4edbbc41b",
		"qlm-vllm-fcfs/instances=8/compact=true":    "84c186b4edbbc41b",
		"qlm-vllm-fcfs/instances=32/compact=false":  "fda4c2aaca8884c7",
		"qlm-vllm-fcfs/instances=32/compact=true":   "fda4c2aaca8884c7",
		"qlm-vllm-fcfs/instances=128/compact=false": "b62d1946731bc2ba",
		"qlm-vllm-fcfs/instances=128/compact=true":  "b62d1946731bc2ba",
	}
	full := os.Getenv("PLAN_SCALE_HASH_FULL") != ""
	for _, pol := range []string{PolicyQLM, PolicyFCFS} {
		for _, k := range []int{1, 4, 16} {
			for _, compact := range []bool{false, true} {
				dep := scaledDeployment(t, k)
				name := fmt.Sprintf("%s/instances=%d/compact=%v", pol, len(dep.Topo.Workers), compact)
				if k > 4 && !full {
					continue
				}
				t.Run(name, func(t *testing.T) {
					p, err := Registry().New(dep, dataplane.Config{Policy: pol}, PolicyQLM)
					if err != nil {
						t.Fatal(err)
					}
					spec, _ := sim.ParseArrival("poisson")
					var srcs []sim.Source
					for a := range dep.Apps {
						s, err := spec.New(dep.Apps[a].RateRPS, dep.Apps[a].Name, uint64(a)+1)
						if err != nil {
							t.Fatal(err)
						}
						srcs = append(srcs, s)
					}
					o := sim.Options{Duration: 10 * dataplane.Second, Seed: 1}
					if compact {
						o.CompactEvery = 2000
					}
					s, err := sim.New(dep, p, srcs, o)
					if err != nil {
						t.Fatal(err)
					}
					h := &decisionHasher{h: fnv.New64a()}
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
