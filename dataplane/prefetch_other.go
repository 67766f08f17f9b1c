//go:build !amd64

package dataplane

import "unsafe"

// prefetch2 is only a hint (prefetch_amd64.go): elsewhere there is none, and the stores it
// would have warmed miss as they did before.
func prefetch2(unsafe.Pointer) {}
