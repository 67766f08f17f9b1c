package formats

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestWriteRefusesNonRegular: CheckWritable and WriteAtomic refuse a path that is a named
// pipe or a link to one (ErrOutputNotRegular) and leave it a pipe; a regular file, a missing
// path and a link to a regular file are written.
func TestWriteRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	pipe := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	regular := filepath.Join(dir, "regular")
	if err := os.WriteFile(regular, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	linkPipe, linkReg := filepath.Join(dir, "link-pipe"), filepath.Join(dir, "link-regular")
	if err := os.Symlink(pipe, linkPipe); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(regular, linkReg); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path    string
		refused bool
	}{
		{pipe, true}, {linkPipe, true}, {regular, false}, {linkReg, false}, {filepath.Join(dir, "new"), false},
	} {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			for name, err := range map[string]error{"CheckWritable": CheckWritable(tc.path), "WriteAtomic": WriteAtomic(tc.path, []byte("{}"))} {
				if got := errors.Is(err, ErrOutputNotRegular); got != tc.refused {
					t.Errorf("%s: %v, want refused %t", name, err, tc.refused)
				}
			}
			if st, err := os.Lstat(pipe); err != nil || st.Mode().Type() != fs.ModeNamedPipe {
				t.Fatalf("the pipe was replaced: %v", err)
			}
		})
	}
}
