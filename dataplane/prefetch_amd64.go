package dataplane

import "unsafe"

// prefetch2 asks the core for the two cache lines from p on (a request record: Request's
// layout) without waiting for them (PREFETCHT0). A load whose value is used, as the
// read-first passes of dispatch and callPolicy make, holds up the instructions behind it
// until the line comes; a prefetch retires at once, so the core goes on with other work
// while the lines come, and the store that later writes them finds them in cache.
//
//go:noescape
func prefetch2(p unsafe.Pointer)
