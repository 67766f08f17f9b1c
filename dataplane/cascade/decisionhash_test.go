package cascade_test

import (
	"encoding/binary"
	"fmt"
	"hash"
	"hash/fnv"
	"os"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	dpc "github.com/plan-dev/plan/dataplane/cascade"
	"github.com/plan-dev/plan/sim"
)

// decisionHasher folds every event a policy handles and every decision it makes into one
// FNV-64a hash (Engine.Observe): two runs with the same hash made the same decisions.
type decisionHasher struct {
	h   hash.Hash64
	buf []byte
}

func newDecisionHasher() *decisionHasher { return &decisionHasher{h: fnv.New64a()} }

func (d *decisionHasher) i(v int64) { d.buf = binary.LittleEndian.AppendUint64(d.buf, uint64(v)) }

func (d *decisionHasher) observe(now dataplane.Time, ev *dataplane.Event, ds []dataplane.Decision) {
	d.buf = d.buf[:0]
	for _, v := range []int64{int64(now), int64(ev.Kind), int64(ev.Req), int64(ev.Batch), int64(ev.Hop), int64(ev.Stage), int64(ev.Worker), ev.Key} {
		d.i(v)
	}
	for _, x := range ds {
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

// TestSimScaleDecisionHash runs BenchmarkSimScale's points (two simulated seconds each) and
// checks the decision-stream hash against the one recorded with the replica scans the
// indexes replaced: an index must not change a single decision. The
// 256-GPU points run with PLAN_SCALE_HASH_FULL=1.
func TestSimScaleDecisionHash(t *testing.T) {
	// Recorded at 4f74776, before cocktail+'s routing and batch-start indexes.
	want := map[string]string{
		"cascadeserve/gpus=16":  "80e9b08e7d4eefd3",
		"cascadeserve/gpus=64":  "4c8d43b7ccbe78de",
		"cascadeserve/gpus=256": "90f306baaa0c7072",
		"cocktail+/gpus=16":     "d4b1d476e48b4092",
		"cocktail+/gpus=64":     "6aaca200f1c0de26",
		"cocktail+/gpus=256":    "5c61e3e373968962",
	}
	full := os.Getenv("PLAN_SCALE_HASH_FULL") != ""
	spec, _ := sim.ParseArrival("poisson")
	for _, pol := range []string{dpc.PolicyGears, dpc.PolicyCocktail} {
		for _, k := range []int{1, 4, 16} {
			if k == 16 && !full {
				continue
			}
			dep := scaledDeployment(t, scaleBase*k)
			name := fmt.Sprintf("%s/gpus=%d", pol, len(dep.Topo.GPUs))
			t.Run(name, func(t *testing.T) {
				p, err := dpc.Registry().New(dep, dataplane.Config{Policy: pol}, dpc.PolicyGears)
				if err != nil {
					t.Fatal(err)
				}
				src, err := spec.New(dep.Apps[0].RateRPS*0.5, dep.Apps[0].Name, 1)
				if err != nil {
					t.Fatal(err)
				}
				s, err := sim.New(dep, p, []sim.Source{src}, sim.Options{Duration: 2 * dataplane.Second, Seed: 1})
				if err != nil {
					t.Fatal(err)
				}
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
