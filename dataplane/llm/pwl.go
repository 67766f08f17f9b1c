package llm

import "github.com/plan-dev/plan/formats"

// PWL is a piecewise-linear time in µs over a token count (formats.LLMIteration).
type PWL []formats.PWLPoint

// At evaluates the curve at x tokens (formats.PWLAt: the profile format's one reading, which
// the profiler's summaries use too).
func (p PWL) At(x int) float64 { return formats.PWLAt(p, x) }
