package llm

import (
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/profiler/llm/pwlcurve"
)

// PWL is a piecewise-linear time in µs over a token count (formats.LLMIteration).
type PWL []formats.PWLPoint

// At evaluates the curve at x tokens (pwlcurve.At: the profiler reads curves the same way).
func (p PWL) At(x int) float64 { return pwlcurve.At(p, x) }
