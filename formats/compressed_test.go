package formats

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/klauspost/compress/zstd"
)

func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zst(t *testing.T, b []byte) []byte {
	t.Helper()
	w, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	return w.EncodeAll(b, nil)
}

// TestReadFileKinds: compressed files read as their content, the limit on the decompressed
// stream, a cut compressed file, FIFOs and links out of the file's directory refused with
// the reason and the path.
func TestReadFileKinds(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	doc := []byte("time_s,a\n0,1\n1,2\n")
	bomb := gz(t, bytes.Repeat([]byte("a"), 1<<20)) // 1 MiB from about 1 KiB
	files := map[string][]byte{
		"doc.csv": doc, "doc.csv.gz": gz(t, doc), "doc.csv.zst": zst(t, doc),
		"bomb.csv.gz": bomb, "cut.csv.gz": gz(t, doc)[:20], "cut.csv.zst": zst(t, doc)[:8],
	}
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(outside, "secret.csv")
	if err := os.WriteFile(secret, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "out.csv")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("doc.csv", filepath.Join(dir, "in.csv")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.csv"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		want error // nil: reads doc
	}{
		{"doc.csv", nil}, {"doc.csv.gz", nil}, {"doc.csv.zst", nil}, {"in.csv", nil},
		{"bomb.csv.gz", ErrTooLarge}, {"cut.csv.gz", ErrTruncated}, {"cut.csv.zst", nil},
		{"out.csv", ErrSymlinkOut}, {"fifo.csv", ErrNotRegular},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name)
			got, err := ReadText(path, 64<<10)
			if c.name == "cut.csv.zst" { // zstd names a cut frame its own way: any error, named
				if err == nil || !strings.Contains(err.Error(), path) {
					t.Fatalf("err %v, want an error naming %s", err, path)
				}
				return
			}
			if c.want == nil {
				if err != nil || !bytes.Equal(got, doc) {
					t.Fatalf("got %q, %v; want the document", got, err)
				}
				f, err := Open(path, 64<<10)
				if err != nil {
					t.Fatal(err)
				}
				b, err := io.ReadAll(f)
				f.Close()
				if err != nil || !bytes.Equal(b, doc) {
					t.Fatalf("Open: %q, %v", b, err)
				}
				return
			}
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("err %v, want %v naming %s", err, c.want, path)
			}
			if c.want == ErrSymlinkOut && !strings.Contains(err.Error(), secret) {
				t.Errorf("err %v does not name the target", err)
			}
		})
	}
	// --follow-links (FollowLinksOut) reads a link out of the tree; a FIFO stays refused.
	FollowLinksOut(true)
	_, errOut := ReadText(filepath.Join(dir, "out.csv"), 64<<10)
	_, errFIFO := ReadText(filepath.Join(dir, "fifo.csv"), 64<<10)
	FollowLinksOut(false)
	if errOut != nil || !errors.Is(errFIFO, ErrNotRegular) {
		t.Errorf("following links: link out %v, FIFO %v; want the link read and the FIFO refused", errOut, errFIFO)
	}
	// The streaming reader fails a read past the limit rather than ending early.
	f, err := Open(filepath.Join(dir, "bomb.csv.gz"), 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := io.ReadAll(f); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Open of a bomb: %v, want ErrTooLarge", err)
	}
}

// FuzzReadCompressed: any bytes named .gz or .zst are read without a panic, and what comes
// back never exceeds the limit (the decompressed stream is what is bounded).
func FuzzReadCompressed(f *testing.F) {
	f.Add([]byte("time_s,a\n0,1\n"), true)
	f.Add(gzBytes([]byte("time_s,a\n0,1\n")), true)
	f.Add(gzBytes(bytes.Repeat([]byte("a"), 1<<16)), true)
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0}, false)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte, isGz bool) {
		name := filepath.Join(dir, "in.zst")
		if isGz {
			name = filepath.Join(dir, "in.gz")
		}
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
		const limit = 4 << 10
		got, err := ReadBytesLimit(name, limit)
		if err == nil && len(got) > limit {
			t.Fatalf("%d bytes read past the limit %d", len(got), limit)
		}
		if err != nil && !strings.Contains(err.Error(), name) {
			t.Fatalf("error %v does not name the file", err)
		}
	})
}

func gzBytes(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write(b)
	_ = w.Close()
	return buf.Bytes()
}

// TestCompressedBombMemory: a small gzip file that expands past the limit is refused
// without holding more than the limit: the decompressed size is counted streaming first,
// and a buffer never grows past limit+1 bytes. A 10 KiB file of 8 MiB of text against a
// 1 MiB limit allocates well under 4× the limit; one that fits is read into a buffer of its
// size.
func TestCompressedBombMemory(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n int) string {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		chunk := bytes.Repeat([]byte("a "), 1<<15)
		for left := n; left > 0; left -= len(chunk) {
			zw.Write(chunk[:min(left, len(chunk))])
		}
		zw.Close()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const limit = 1 << 20
	allocs := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	bomb := write("bomb.json.gz", 8<<20)
	var err error
	got := allocs(func() { _, err = ReadText(bomb, limit) })
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("bomb: %v, want ErrTooLarge", err)
	}
	if got > 4*limit {
		t.Errorf("bomb: %d bytes allocated against a %d-byte limit", got, limit)
	}
	fits := write("fits.json.gz", limit-100)
	var data []byte
	got = allocs(func() { data, err = ReadText(fits, limit) })
	if err != nil || len(data) != limit-100 || got > 3*limit {
		t.Errorf("fits: %d bytes, %v; %d allocated", len(data), err, got)
	}
}

// TestWorkloadSizeCap: a workload document past MaxWorkloadBytes is refused before it is
// read (a million LLM classes took 3.3 GB to decode), naming the file and the cap; other
// documents keep MaxFileBytes.
func TestWorkloadSizeCap(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "huge.yaml")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("apiVersion: plan/v1\nkind: Workload\nllm_classes:\n")
	line := []byte("  - {name: c, model: m, slo: 1s, rate_rps: 1, input_tokens: {mean: 1}, output_tokens: {mean: 1}}\n")
	for n := 0; n < MaxWorkloadBytes/len(line)+1; n++ {
		f.Write(line)
	}
	f.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = ReadInto[*Workload](p, nil)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "huge.yaml") || !strings.Contains(err.Error(), "33554432") {
		t.Fatalf("err %v: want too large, naming the file and the cap", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("%d bytes allocated refusing it: want it refused before reading", got)
	}
}
