package export

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckDir: an output directory Write cannot replace is refused before any work,
// named as given and saying why: the root (Go's "pattern contains path separator" before),
// the current directory and those holding it (called "the filesystem root", and with
// --force .. would have been replaced whole), a file, a parent that is a file. Missing
// directories on the way are created, as before.
func TestCheckDir(t *testing.T) {
	base := t.TempDir()
	cwd := filepath.Join(base, "work", "here")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cwd, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(cwd)
	for _, tc := range []struct {
		dir   string
		force bool
		err   string
	}{
		{"/", true, "-o /: is the filesystem root"},
		{base + "/../../../../../..", true, "is the filesystem root"},
		{".", true, "-o .: is the current directory"},
		{"./", true, "-o ./: is the current directory"},
		{"..", true, "-o ..: is a directory holding the current directory"},
		{base, true, "is a directory holding the current directory"},
		{"file", true, "-o file: exists and is not a directory"},
		{"file/out", false, "-o file/out: " + filepath.Join(cwd, "file") + ": is not a directory"},
		{"no/such", false, ""},
		{"", false, "an output directory is required"},
		{"new", false, ""},
		{"../sibling", false, ""},
	} {
		err := CheckDir(tc.dir, tc.force)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("CheckDir(%q): %v", tc.dir, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("CheckDir(%q): %v, want %q", tc.dir, err, tc.err)
		}
	}
	// Refused by Write too, before anything is touched.
	if err := Write("..", Files{"a.yaml": nil}, true); err == nil {
		t.Fatal("Write(..) replaced the parent of the current directory")
	}
	if _, err := os.Stat(filepath.Join(cwd, "file")); err != nil {
		t.Errorf("the current directory changed: %v", err)
	}
}
