package llm

import (
	"math/rand/v2"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/profiler/llm/pwlcurve"
)

// TestPWLReadsAsTheProfiler: the engine reads a step-time curve with formats.PWLAt and the
// profiler's summaries with pwlcurve.At; until the profiler calls the format's reading too,
// the two must agree on every curve, or a profile's summary fields and a replay of its curve
// drift apart.
func TestPWLReadsAsTheProfiler(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 200 {
		var p PWL
		tok := r.IntN(64)
		for range n % 6 {
			tok += 1 + r.IntN(512)
			p = append(p, formats.PWLPoint{Tokens: tok, Us: 1000 * r.Float64()})
		}
		for _, x := range []int{0, 1, tok / 2, tok, tok + 1, tok + r.IntN(4096)} {
			if got, want := p.At(x), pwlcurve.At(p, x); got != want {
				t.Fatalf("curve %v at %d: engine reads %g, profiler %g", p, x, got, want)
			}
		}
	}
}
