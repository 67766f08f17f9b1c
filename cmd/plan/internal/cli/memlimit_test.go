package cli

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// TestBoundMemory: a one-shot command given a large file sets a soft memory limit of 4× its
// size plus 256 MiB; serve, small inputs and a user's GOMEMLIMIT are left alone.
func TestBoundMemory(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	const size = 100 << 20
	if err := f.Truncate(size); err != nil { // sparse: no 100 MB written
		t.Fatal(err)
	}
	f.Close()
	small := filepath.Join(dir, "small.json")
	if err := os.WriteFile(small, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	for _, tc := range []struct {
		name, command, file, env string
		want                     int64
	}{
		{"validate a large file", "validate", big, "", 4*size + 256<<20},
		{"simulate a large plan", "simulate", big, "", 4*size + 256<<20},
		{"serve is long-running", "serve", big, "", math.MaxInt64},
		{"small input", "check", small, "", math.MaxInt64},
		{"the user's GOMEMLIMIT", "validate", big, "1GiB", math.MaxInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetMemoryLimit(math.MaxInt64)
			t.Setenv("GOMEMLIMIT", tc.env)
			boundMemory(tc.command, []string{tc.file, "--not-a-file"})
			if got := debug.SetMemoryLimit(-1); got != tc.want {
				t.Errorf("memory limit %d, want %d", got, tc.want)
			}
		})
	}
}
