package formats

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"unicode/utf8"

	"github.com/plan-dev/plan/formats/jsonx"
)

// Sentinels of the bounded readers (wrapped in a *ReadError naming the path).
var (
	// ErrNotRegular marks a path that is not a regular file: a directory, a named pipe, a
	// device such as /dev/zero or a socket. Reading one could block forever or never end.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge marks a file or stream beyond the reader's size limit. It is jsonx's
	// sentinel for a document beyond its limit: one fact, one value under errors.Is.
	ErrTooLarge = jsonx.ErrTooLarge
	// ErrNotText marks a document holding binary data: no YAML or JSON document can.
	ErrNotText = errors.New("not a YAML or JSON document")
)

// ReadBytesLimit reads a whole regular file of at most limit bytes. Anything else is refused
// before a byte is read — a missing file, a directory, a FIFO (whose open would block), a
// device (/dev/zero never ends), a file larger than limit — and the memory read is bounded by
// the file's size. Errors are *ReadError: `PATH: cannot read: CAUSE`.
func ReadBytesLimit(path string, limit int64) ([]byte, error) { return readFile(path, limit, false) }

// ReadText is ReadBytesLimit for a text file (a YAML or JSON document, a CSV trace): it also
// refuses, from its first SniffBytes and before reading the rest, a file holding binary data
// (ErrNotText): a disk image or an archive named by mistake fails at once.
func ReadText(path string, limit int64) ([]byte, error) { return readFile(path, limit, true) }

// ReadTextIn is ReadText for a file found by scanning directory root (a directory a flag
// names, read file by file): besides ReadText's checks it refuses, unless FollowLinksOut
// allows it, a file whose resolved path leaves root — through a linked file or a linked
// subdirectory — so a directory of inputs cannot read what lies outside it.
func ReadTextIn(root, path string, limit int64) ([]byte, error) {
	if err := inRoot(root, path); err != nil {
		return nil, &ReadError{Path: path, Err: err}
	}
	return ReadText(path, limit)
}

func readFile(path string, limit int64, text bool) ([]byte, error) {
	f, size, err := openChecked(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, compressed := f.(*zReader); compressed {
		// The decompressed size is unknown until the stream ends, and growing a buffer to
		// it doubles past the limit (a 4 MB gzip bomb peaked at 1.4-1.8 GB before it was
		// refused at 512 MiB): count it first, streaming, then read into a buffer of that
		// size. Memory stays at the content's size, the limit at most.
		if size, err = decompressedSize(path, limit, text); err != nil {
			return nil, &ReadError{Path: path, Err: err}
		}
	}
	buf := make([]byte, 0, size+1)
	if text {
		if buf, err = sniffTextInto(f, buf, limit); err != nil {
			return nil, &ReadError{Path: path, Err: err}
		}
	}
	data, err := readAllLimit(f, buf, limit)
	if err != nil {
		return nil, &ReadError{Path: path, Err: err}
	}
	return data, nil
}

// Open opens a regular file for streaming, with every check ReadBytesLimit makes (no FIFO,
// device, directory, or symbolic link out of the file's directory; a compressed file
// decompressed), and reads at most limit bytes of its (decompressed) content: a Read past
// the limit fails with ErrTooLarge. Errors name the path (*ReadError).
func Open(path string, limit int64) (io.ReadCloser, error) {
	f, _, err := openChecked(path, limit)
	if err != nil {
		return nil, err
	}
	return &limitedFile{rc: f, path: path, left: limit, limit: limit}, nil
}

// limitedFile fails a read past its limit instead of ending the stream early: a reader that
// stops at the limit would parse a cut file as a whole one.
type limitedFile struct {
	rc          io.ReadCloser
	path        string
	left, limit int64
}

func (l *limitedFile) Read(p []byte) (int, error) {
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.rc.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return 0, &ReadError{Path: l.path, Err: fmt.Errorf("larger than %d bytes: %w", l.limit, ErrTooLarge)}
	}
	if err != nil && err != io.EOF {
		return n, &ReadError{Path: l.path, Err: err}
	}
	return n, err
}

func (l *limitedFile) Close() error { return l.rc.Close() }

// openChecked opens path after the checks every reader makes, and returns its content's
// reader (decompressing a .gz or .zst file) and the file's size on disk.
func openChecked(path string, limit int64) (io.ReadCloser, int64, error) {
	// Stat before open: opening a FIFO blocks until a writer appears.
	st, err := os.Stat(path)
	if err != nil {
		return nil, 0, &ReadError{Path: path, Err: err}
	}
	if err := regular(st, limit); err != nil {
		return nil, 0, &ReadError{Path: path, Err: err}
	}
	if err := symlinkInTree(path); err != nil {
		return nil, 0, &ReadError{Path: path, Err: err}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, &ReadError{Path: path, Err: err}
	}
	// The path may have been replaced between Stat and Open: check what was opened.
	if st, err = f.Stat(); err != nil {
		f.Close()
		return nil, 0, &ReadError{Path: path, Err: err}
	}
	if err := regular(st, limit); err != nil {
		f.Close()
		return nil, 0, &ReadError{Path: path, Err: err}
	}
	rc, err := decompress(path, f)
	if err != nil {
		f.Close()
		return nil, 0, &ReadError{Path: path, Err: err}
	}
	return rc, st.Size(), nil
}

func regular(st fs.FileInfo, limit int64) error {
	m := st.Mode()
	switch {
	case m.IsDir():
		return fmt.Errorf("is a directory: %w", ErrNotRegular)
	case m&fs.ModeNamedPipe != 0:
		return fmt.Errorf("a named pipe (FIFO), %w", ErrNotRegular)
	case m&fs.ModeDevice != 0 || m&fs.ModeCharDevice != 0:
		return fmt.Errorf("a device, %w", ErrNotRegular)
	case !m.IsRegular():
		return fmt.Errorf("%w (%s)", ErrNotRegular, m.Type())
	case st.Size() > limit:
		return fmt.Errorf("%d bytes: larger than %d bytes: %w", st.Size(), limit, ErrTooLarge)
	}
	return nil
}

// decompressedSize streams path's decompressed content to count it, refusing more than
// limit bytes (and, for text, binary data from the first bytes) without holding it.
func decompressedSize(path string, limit int64, text bool) (int64, error) {
	f, _, err := openChecked(path, limit)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var head int64
	if text {
		b, err := sniffText(f, limit)
		if err != nil {
			return 0, err
		}
		head = int64(len(b))
	}
	n, err := io.Copy(io.Discard, io.LimitReader(f, limit+1-head))
	if err != nil {
		return 0, err
	}
	if head+n > limit {
		return 0, fmt.Errorf("larger than %d bytes: %w", limit, ErrTooLarge)
	}
	return head + n, nil
}

// readAllLimit reads r to its end into buf, failing once more than limit bytes came. The
// buffer grows by doubling but never past limit+1 bytes.
func readAllLimit(r io.Reader, buf []byte, limit int64) ([]byte, error) {
	lr := &io.LimitedReader{R: r, N: limit + 1}
	for {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(max(2*int64(cap(buf)), 4096), limit+1))
			copy(grown, buf)
			buf = grown
		}
		n, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, fmt.Errorf("larger than %d bytes: %w", limit, ErrTooLarge)
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// ReadStream reads a stream (standard input) of at most limit bytes, and gives up with the
// context's error when ctx is done first (SIGINT or SIGTERM while a pipe stays open). name
// labels errors (`<stdin>: cannot read: CAUSE`). A read given up on leaves its goroutine
// blocked in Read until the stream ends or the process exits.
func ReadStream(ctx context.Context, name string, r io.Reader, limit int64) ([]byte, error) {
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		// Garbage is refused from its first bytes (512 MiB of zeros on
		// standard input reached 1.78 GB before the parser refused it).
		buf, err := sniffText(r, limit)
		if err == nil {
			buf, err = readAllLimit(r, buf, limit)
		}
		done <- result{buf, err}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			return nil, &ReadError{Path: name, Err: res.err}
		}
		return res.data, nil
	case <-ctx.Done():
		return nil, &ReadError{Path: name, Err: fmt.Errorf("interrupted: %w", context.Cause(ctx))}
	}
}

// ReadAllLimit reads r to its end, failing with ErrTooLarge once more than limit bytes came:
// for a stream derived from a guarded file (a gzip member), whose expansion is unbounded.
func ReadAllLimit(r io.Reader, limit int64) ([]byte, error) { return readAllLimit(r, nil, limit) }

// SniffBytes is how much of a document is checked for binary data before the rest is read.
const SniffBytes = 4096

// sniffText reads the first SniffBytes of r (fewer at its end) and refuses them when they
// are binary data (checkText).
func sniffText(r io.Reader, limit int64) ([]byte, error) {
	return sniffTextInto(r, make([]byte, 0, SniffBytes), limit)
}

// sniffTextInto is sniffText appending to buf.
func sniffTextInto(r io.Reader, buf []byte, limit int64) ([]byte, error) {
	want := min(int64(SniffBytes), limit+1)
	if int64(cap(buf)) < want {
		buf = make([]byte, 0, want)
	}
	n, err := io.ReadFull(r, buf[:want])
	buf = buf[:n]
	final := err == io.EOF || err == io.ErrUnexpectedEOF
	if err != nil && !final {
		return nil, err
	}
	if int64(n) > limit {
		return nil, fmt.Errorf("larger than %d bytes: %w", limit, ErrTooLarge)
	}
	if err := checkText(buf, final); err != nil {
		return nil, err
	}
	return buf, nil
}

// checkText refuses what no YAML or JSON document holds: a control character other than
// tab, line feed and carriage return (YAML 1.2's c-printable, JSON's whitespace; NUL bytes
// also mean UTF-16, which the decoders do not take), or bytes that are not UTF-8. A rune cut
// by the end of a prefix (final false) is not judged.
func checkText(b []byte, final bool) error {
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
				return fmt.Errorf("binary data (byte 0x%02x at offset %d): %w", c, i, ErrNotText)
			}
			i++
			continue
		}
		if !final && !utf8.FullRune(b[i:]) {
			return nil
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return fmt.Errorf("bytes that are not UTF-8 (0x%02x at offset %d): %w", c, i, ErrNotText)
		}
		i += size
	}
	return nil
}
