//go:build !unix

package ppipesys

import "time"

// cpuTime is unknown here: the prediction's reserve assumes a CPU of its own.
func cpuTime() (time.Duration, bool) { return 0, false }
