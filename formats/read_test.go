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

// TestReadBytesRefusesNonRegular: validate, check and simulate blocked
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

// zeros is an endless stream of NUL bytes that counts what was read from it.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	clear(p)
	z.n += int64(len(p))
	return len(p), nil
}

// TestReadTextRefusesBinary: 512 MiB of zeros on standard input reached
// 1.78 GB before the parser refused it. A document holding binary data is refused from its
// first bytes, on a stream and in a file, before the rest is read.
func TestReadTextRefusesBinary(t *testing.T) {
	cases := []struct {
		name string
		data string
		bad  string // "" = accepted; else the start of the reason
	}{
		{"YAML", "apiVersion: plan/v1\nkind: Trace\n", ""},
		{"JSON with tabs and CRLF", "{\t\"a\": 1,\r\n \"b\": \"ü→\u007f\"}\r\n", ""},
		{"UTF-8 byte order mark", "\ufeffapiVersion: plan/v1\n", ""},
		{"empty", "", ""},
		{"zeros", "\x00\x00\x00\x00", "binary data (byte 0x00 at offset 0)"},
		{"ELF header", "\x7fELF\x02\x01\x01", "binary data (byte 0x02 at offset 4)"},
		{"gzip", "\x1f\x8b\x08\x00", "binary data (byte 0x1f at offset 0)"},
		{"UTF-16", "\xff\xfea\x00p\x00", "bytes that are not UTF-8 (0xff at offset 0)"},
		{"Latin-1", "name: caf\xe9\n", "bytes that are not UTF-8 (0xe9 at offset 9)"},
		{"escape after text", "kind: Plan\n\x1b[31m", "binary data (byte 0x1b at offset 11)"},
		{"rune cut at the end", "a: \xc3", "bytes that are not UTF-8 (0xc3 at offset 3)"},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-"))
			if err := os.WriteFile(path, []byte(c.data), 0o644); err != nil {
				t.Fatal(err)
			}
			fromFile, ferr := ReadBytes(path)
			fromStream, serr := ReadStream(context.Background(), "<stdin>", strings.NewReader(c.data), MaxFileBytes)
			for _, got := range []struct {
				what string
				data []byte
				err  error
				name string
			}{{"file", fromFile, ferr, path}, {"stream", fromStream, serr, "<stdin>"}} {
				if c.bad == "" {
					if got.err != nil || string(got.data) != c.data {
						t.Errorf("%s: %q, %v; want it read", got.what, got.data, got.err)
					}
					continue
				}
				want := got.name + ": cannot read: " + c.bad
				if !errors.Is(got.err, ErrNotText) || !strings.HasPrefix(got.err.Error(), want) {
					t.Errorf("%s: %v, want ErrNotText starting %q", got.what, got.err, want)
				}
			}
		})
	}
	// A long text whose rune straddles the sniffed prefix is read whole.
	long := strings.Repeat("a", SniffBytes-1) + "é and more"
	if got, err := ReadStream(context.Background(), "<stdin>", strings.NewReader(long), MaxFileBytes); err != nil || string(got) != long {
		t.Errorf("rune across the prefix: %v", err)
	}
	// An endless stream of zeros is refused after its first bytes, not at the size limit.
	z := &zeros{}
	_, err := ReadStream(context.Background(), "<stdin>", z, 64<<20)
	if !errors.Is(err, ErrNotText) || z.n > SniffBytes {
		t.Errorf("zeros: %v after %d bytes, want ErrNotText within %d", err, z.n, SniffBytes)
	}
}
