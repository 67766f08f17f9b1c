package ppipe_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/plan-dev/plan/internal/fixture/policytest"
)

// TestSimScaleDecisionHash runs BenchmarkSimScale's load points once each and checks the
// decision-stream hash against the one recorded before the cancel/forget change: a refactor of the policy's state must not change a single decision.
func TestSimScaleDecisionHash(t *testing.T) {
	// Recorded at e3a0a60 (before the policies handled EvCancel and Forget); the 400 and
	// 1,600-GPU points run with PLAN_SCALE_HASH_FULL=1 (about 40 s).
	want := map[string]string{
		"busy-until/gpus=100":         "293f5734ea6939d0",
		"busy-until/gpus=400":         "c9e3d2f785f1f6a6",
		"busy-until/gpus=1600":        "92ccb26070505286",
		"interval/gpus=100":           "293f5734ea6939d0",
		"interval/gpus=400":           "c9e3d2f785f1f6a6",
		"interval/gpus=1600":          "92ccb26070505286",
		"busy-until-retain/gpus=100":  "293f5734ea6939d0",
		"busy-until-retain/gpus=400":  "c9e3d2f785f1f6a6",
		"busy-until-retain/gpus=1600": "92ccb26070505286",
	}
	full := os.Getenv("PLAN_SCALE_HASH_FULL") != ""
	for _, mode := range []string{"busy-until", "interval", "busy-until-retain"} {
		for _, k := range []int{1, 4, 16} {
			name := fmt.Sprintf("%s/gpus=%d", mode, 100*k)
			if k > 1 && !full {
				continue
			}
			t.Run(name, func(t *testing.T) {
				s, err := scaleCase(t, mode, k).Build()
				if err != nil {
					t.Fatal(err)
				}
				h := &policytest.DecisionHasher{}
				s.Engine.Observe(h.Observe)
				if _, err := s.Run(); err != nil {
					t.Fatal(err)
				}
				got := h.Sum()
				t.Logf("%s: hash %s events %d", name, got, s.Engine.Events())
				if w := want[name]; w != got {
					t.Errorf("%s: decision hash %s, want %s", name, got, w)
				}
			})
		}
	}
}
