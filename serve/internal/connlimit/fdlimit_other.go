//go:build !unix

package connlimit

// fdLimit is a conservative descriptor budget where the limit cannot be read.
func fdLimit() int { return 4096 }
