// Package gpus is the profiler's name for the GPU catalogue (internal/base/gpucat): the roofline
// backend, the LLM estimator and the kernel tables read a type's peak rates, memory and
// links through it. The facts live in the catalogue alone.
package gpus

import "github.com/plan-dev/plan/internal/base/gpucat"

// Precision names an arithmetic mode.
type Precision = gpucat.Precision

// Precisions the catalogue carries peak rates for.
const (
	FP32 = gpucat.FP32
	TF32 = gpucat.TF32
	FP16 = gpucat.FP16
)

// Spec describes one GPU type (gpucat.Spec).
type Spec = gpucat.Spec

// All returns every known GPU in table order (older and smaller first).
func All() []Spec { return gpucat.All() }

// Names lists the known GPU names in table order.
func Names() []string { return gpucat.Names() }

// Lookup finds a GPU by name, case-insensitively.
func Lookup(name string) (Spec, error) { return gpucat.Lookup(name) }
