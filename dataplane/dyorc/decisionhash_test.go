package dyorc

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/sim"
)

// TestSimScaleDecisionHash runs BenchmarkSimScale's points once each (60 simulated seconds)
// and checks an FNV-64a hash of every event the policy handles and every decision it makes
// (Engine.Observe) against the one recorded before any change of the DP's layers: a
// faster layer must not change a single decision. Every point takes well under a
// second.
func TestSimScaleDecisionHash(t *testing.T) {
	// Recorded at 4f74776.
	want := map[string]string{
		"dyorc/gpus=8":       "46435bac658e4516",
		"dyorc/gpus=32":      "50f8a124f8df1474",
		"dyorc/gpus=128":     "bc9d57b25c86fa42",
		"dyorc-ray/gpus=8":   "4dd8771d873bccb9",
		"dyorc-ray/gpus=32":  "ab990fe2b3fad0ab",
		"dyorc-ray/gpus=128": "2208bcc7e466c427",
	}
	w := loadWorkflow(t, "workload.json")
	for _, pol := range []string{"dyorc", "dyorc-ray"} {
		for _, k := range []int{1, 4, 16} {
			name := fmt.Sprintf("%s/gpus=%d", pol, 8*k)
			t.Run(name, func(t *testing.T) {
				dep := spreadDeployment(t, w, 8*k)
				sp, _ := Registry().Lookup(pol)
				p, err := sp.New(dataplane.Config{Policy: pol})
				if err != nil {
					t.Fatal(err)
				}
				var srcs []sim.Source
				for a := range dep.Apps {
					s, err := sim.ArrivalSpec{Kind: "poisson"}.New(max(dep.Apps[a].RateRPS, 0.5)*float64(k), dep.Apps[a].Name, uint64(a)+1)
					if err != nil {
						t.Fatal(err)
					}
					srcs = append(srcs, s)
				}
				s, err := sim.New(dep, p, srcs, sim.Options{Duration: 60 * dataplane.Second, Seed: 1, Jitter: 0.05})
				if err != nil {
					t.Fatal(err)
				}
				h := fnv.New64a()
				var buf []byte
				put := func(v int64) { buf = binary.LittleEndian.AppendUint64(buf, uint64(v)) }
				s.Engine.Observe(func(now dataplane.Time, ev *dataplane.Event, ds []dataplane.Decision) {
					buf = buf[:0]
					for _, v := range []int64{int64(now), int64(ev.Kind), int64(ev.Req), int64(ev.Batch), int64(ev.Stage), int64(ev.Worker), ev.Key} {
						put(v)
					}
					for _, x := range ds {
						for _, v := range []int64{int64(x.Kind), int64(x.App), int64(x.Req), int64(x.Stage), int64(x.At), x.Key, int64(x.Worker), x.Bytes} {
							put(v)
						}
						buf = append(buf, x.Reason...)
						buf = append(buf, x.Model...)
						for _, r := range x.Reqs {
							put(int64(r))
						}
						for _, p := range x.Path {
							put(int64(p.Stage))
							put(int64(p.Worker))
							put(int64(p.Dur))
						}
					}
					h.Write(buf)
				})
				if _, err := s.Run(); err != nil {
					t.Fatal(err)
				}
				got := fmt.Sprintf("%016x", h.Sum64())
				t.Logf("%s: hash %s events %d", name, got, s.Engine.Events())
				if w := want[name]; w != got {
					t.Errorf("%s: decision hash %s, want %s", name, got, w)
				}
			})
		}
	}
}
