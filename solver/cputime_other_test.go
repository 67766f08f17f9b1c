//go:build !unix

package solver

import "time"

// processCPU is not measured here; the cpu-ms/op metric reads 0.
func processCPU() time.Duration { return 0 }
