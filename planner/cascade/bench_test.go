package cascade

import (
	"context"
	"testing"
	"time"
)

// BenchmarkPlanBERT plans the paper's BERT set-up on stand-ins: 10,000 validation
// samples, five models, 64 QPS ranges up to 7,600 QPS, one GPU, p95 ≤ 400 ms (target: ≤ 1 s,
// so that re-planning is cheap next to the paper's minutes-long windows).
func BenchmarkPlanBERT(b *testing.B) { benchPlan(b, BERT, 7600, 64, 1, 400*time.Millisecond) }

// BenchmarkPlanLlama plans the Llama set-up: four models (70B on two GPUs), ranges up
// to 15 QPS (12 ranges, as the bench), four GPUs, p95 ≤ 6 s (target: ≤ 10 s).
func BenchmarkPlanLlama(b *testing.B) { benchPlan(b, Llama, 15, 12, 4, 6*time.Second) }

func benchPlan(b *testing.B, f Family, qmax float64, ranges, gpus int, lat time.Duration) {
	c := benchWorkload(f, qmax, ranges, lat, 0)
	c.Validation = f.Generate(10000, 1)
	tk := standinTask(b, f, 10000, 1)
	hw := Hardware{GPU: f.GPU, N: gpus, PerServer: 2, Mem: f.GPUMem}
	for b.Loop() {
		res, err := Plan(context.Background(), tk, c, hw, Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(res.Acc, "accuracy")
		b.ReportMetric(float64(res.Sims), "sims")
		b.ReportMetric(float64(res.LPs), "LPs")
	}
}
