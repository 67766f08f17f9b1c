package dyorc

import (
	"fmt"
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// BenchmarkDP measures one speculative DP decision (a 3-task chain, GILL's longest) on 8 to 256
// GPUs: the decision cost our own target bounds (≤ 100 µs per request at 32 GPUs; the paper
// gives no number, only that overhead grows with the devices, DyOrc §8.5) and the basis of the
// per-state charge (DefaultStateUs).
func BenchmarkDP(b *testing.B) {
	w := loadWorkflow(b, "gill.json")
	for _, g := range []int{8, 32, 128, 256} {
		b.Run(fmt.Sprintf("gpus=%d", g), func(b *testing.B) {
			dep := spreadDeployment(b, w, g)
			p := New("dyorc", Options{Mode: ModeSpec})
			if _, err := dataplane.NewEngine(dep, p, nopFx{}); err != nil {
				b.Fatal(err)
			}
			chain := []int{w.SvcIndex["vit"], w.SvcIndex["llm7b"], w.SvcIndex["sd15"]}
			its := []int{1, 1, 1}
			states := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_, _, states = p.DP(0, 0, -1, -1, 0, chain, its)
			}
			b.ReportMetric(float64(states), "states/op")
		})
	}
}
