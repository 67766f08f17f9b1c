package speedbench

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCachesIn reads a sysfs cache tree: data and unified caches by level, instruction
// caches left out, an index without a size skipped.
func TestCachesIn(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ index, level, kind, size string }{
		{"index0", "1", "Data", "32K"},
		{"index1", "1", "Instruction", "32K"},
		{"index2", "2", "Unified", "512K"},
		{"index3", "3", "Unified", "32768K"},
		{"index4", "4", "Unified", ""},
	} {
		d := filepath.Join(dir, c.index)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, v := range map[string]string{"level": c.level, "type": c.kind, "size": c.size} {
			if err := os.WriteFile(filepath.Join(d, name), []byte(v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got, want := cachesIn(dir), "L1d 32K, L2 512K, L3 32768K"; got != want {
		t.Errorf("cachesIn = %q, want %q", got, want)
	}
	if got := cachesIn(filepath.Join(dir, "missing")); got != "" {
		t.Errorf("cachesIn(missing) = %q, want empty", got)
	}
}
