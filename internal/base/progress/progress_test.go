package progress

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestSilentUnlessTerminal: a buffer, a regular file, a pipe and /dev/null (a character
// device that is no terminal) get no progress; the reporter is then a no-op, nil included.
func TestSilentUnlessTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	var buf bytes.Buffer
	for _, tc := range []struct {
		name string
		r    *Reporter
	}{{"buffer", New(&buf)}, {"file", New(f)}, {"pipe", New(pw)}, {"dev-null", New(null)}, {"nil", nil}} {
		if tc.r.Active() {
			t.Errorf("%s: active", tc.name)
		}
		tc.r.Printf("step %d", 1)
		tc.r.Done()
	}
	if buf.Len() != 0 {
		t.Errorf("buffer got %q", buf.String())
	}
	if st, _ := f.Stat(); st.Size() != 0 {
		t.Errorf("file got %d bytes", st.Size())
	}
}

// TestActiveWrites: an active reporter rewrites one line and clears it when done.
func TestActiveWrites(t *testing.T) {
	var buf bytes.Buffer
	r := &Reporter{w: &buf}
	r.Printf("a %d", 1)
	r.Printf("b")
	r.Done()
	r.Done()
	if got, want := buf.String(), "\r\033[Ka 1\r\033[Kb\r\033[K"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
