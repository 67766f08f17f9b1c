package formats

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadBytesRefusesNonRegular (issue 17 item 7): validate, check and simulate blocked
// forever on a FIFO, and /dev/zero was read up to the cap (1.27 GB RSS) before it was
// refused. Every path that is not a regular file within the limit is refused before a byte
// is read, with its path and the reason.
func TestReadBytesRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxFileBytes + 1); err != nil { // sparse: costs no disk
		t.Fatal(err)
	}
	f.Close()
	small := filepath.Join(dir, "small.json")
	if err := os.WriteFile(small, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path string
		is   error
		want string
	}{
		{fifo, ErrNotRegular, fifo + ": cannot read: a named pipe (FIFO), not a regular file"},
		{"/dev/zero", ErrNotRegular, "/dev/zero: cannot read: a device, not a regular file"},
		{dir, ErrNotRegular, dir + ": cannot read: is a directory"},
		{big, ErrTooLarge, big + ": cannot read: 536870913 bytes: larger than 536870912 bytes"},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.path), func(t *testing.T) {
			done := make(chan error, 1)
			go func() { _, err := ReadBytes(c.path); done <- err }()
			select {
			case err := <-done:
				if !errors.Is(err, c.is) || !strings.HasPrefix(err.Error(), c.want) {
					t.Errorf("err = %v, want %v starting %q", err, c.is, c.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("ReadBytes blocked")
			}
		})
	}
	if data, err := ReadBytesLimit(small, 2); err != nil || string(data) != "{}" {
		t.Errorf("small file: %q, %v", data, err)
	}
	if _, err := ReadBytesLimit(small, 1); !errors.Is(err, ErrTooLarge) {
		t.Errorf("limit 1: %v", err)
	}
}

// TestReadStream: a stream is read up to the limit, and a signal (a cancelled context)
// interrupts a read that would otherwise wait forever on an open pipe.
func TestReadStream(t *testing.T) {
	data, err := ReadStream(context.Background(), "<stdin>", strings.NewReader("abc"), 3)
	if err != nil || string(data) != "abc" {
		t.Errorf("got %q, %v", data, err)
	}
	if _, err := ReadStream(context.Background(), "<stdin>", strings.NewReader("abcd"), 3); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the limit: %v", err)
	}
	r, w := io.Pipe()
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = ReadStream(ctx, "<stdin>", r, 3)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "<stdin>: cannot read: interrupted") {
		t.Errorf("cancelled read: %v", err)
	}
}
