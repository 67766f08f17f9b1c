package ppipe_test

import (
	"encoding/binary"
	"fmt"
	"hash"
	"hash/fnv"
	"os"
	"testing"

	"github.com/plan-dev/plan/dataplane"
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

// TestSimScaleDecisionHash runs BenchmarkSimScale's load points once each and checks the
// decision-stream hash against the one recorded before the cancel/forget change: a refactor of the policy's state must not change a single decision.
func TestSimScaleDecisionHash(t *testing.T) {
	// Recorded at e3a0a60 (before the policies handled EvCancel and Forget); the 400 and
	// 1,600-GPU points run with PLAN_SCALE_HASH_FULL=1 (about 40 s).
	want := map[string]string{
		"busy-until/gpus=100":          "293f5734ea6939d0",
		"busy-until/gpus=400":          "c9e3d2f785f1f6a6",
		"busy-until/gpus=1600":         "92ccb26070505286",
		"interval/gpus=100":            "293f5734ea6939d0",
		"interval/gpus=400":            "c9e3d2f785f1f6a6",
		"interval/gpus=1600":           "92ccb26070505286",
		"busy-until-compact/gpus=100":  "293f5734ea6939d0",
		"busy-until-compact/gpus=400":  "c9e3d2f785f1f6a6",
		"busy-until-compact/gpus=1600": "92ccb26070505286",
	}
	full := os.Getenv("PLAN_SCALE_HASH_FULL") != ""
	for _, mode := range []string{"busy-until", "interval", "busy-until-compact"} {
		for _, k := range []int{1, 4, 16} {
			name := fmt.Sprintf("%s/gpus=%d", mode, 100*k)
			if k > 1 && !full {
				continue
			}
			t.Run(name, func(t *testing.T) {
				cfg := scaleConfig(t, mode, k)
				s, err := newRun(cfg, 0.9, mode == "busy-until-compact")
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
