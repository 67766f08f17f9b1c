//go:build !cgo

package serve

import (
	"os"
	"testing"
)

// TestONNXWorkers stands in for the cgo test: without cgo there is no ONNX Runtime.
func TestONNXWorkers(t *testing.T) {
	const msg = "onnx workers need cgo (ONNX Runtime is a C library): built with CGO_ENABLED=0"
	if os.Getenv("PLAN_REQUIRE_ALL") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
