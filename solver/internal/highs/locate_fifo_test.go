package highs

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestLoadWasmRefusesSpecialFiles: a PLAN_HIGHS_WASM naming a FIFO or a device is refused at
// once, naming the path (it was read with os.ReadFile, which blocked on a FIFO forever and
// read /dev/zero until memory ran out).
func TestLoadWasmRefusesSpecialFiles(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "highs.wasm")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	for _, p := range []string{fifo, "/dev/zero"} {
		t.Run(filepath.Base(p), func(t *testing.T) {
			t.Setenv(EnvWasm, p)
			_, _, err := LoadWasm()
			if err == nil || !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "not a regular file") {
				t.Fatalf("err %v, want ErrUnavailable naming %s as not a regular file", err, p)
			}
		})
	}
}
