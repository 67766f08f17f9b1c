package formats

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/klauspost/compress/zstd"
)

// ErrSymlinkOut marks a symbolic link whose target lies outside the directory holding the
// link: an input named inside a project must not read /etc/shadow or another user's files
// through a link planted beside it.
var ErrSymlinkOut = errors.New("a symbolic link out of its directory")

// followLinksOut, when set (FollowLinksOut), lets inputs be symbolic links out of their
// directory: a user who keeps shared inputs elsewhere and links them in says so once.
var followLinksOut atomic.Bool

// FollowLinksOut sets whether inputs may be symbolic links out of their directory (the
// command line's --follow-links). Off by default: such links are refused (ErrSymlinkOut).
func FollowLinksOut(on bool) { followLinksOut.Store(on) }

// symlinkInTree refuses path when it is a symbolic link resolving outside the directory that
// holds it (both resolved, so a link inside a linked directory is judged by where it lands),
// unless FollowLinksOut allows it. Links inside the tree, and real files reached through
// linked directories, are read.
func symlinkInTree(path string) error {
	if followLinksOut.Load() {
		return nil
	}
	lst, err := os.Lstat(path)
	if err != nil || lst.Mode()&os.ModeSymlink == 0 {
		return nil
	}
	return within(filepath.Dir(path), path, "points to")
}

// inRoot refuses path when, resolved, it lies outside directory root (resolved too), unless
// FollowLinksOut allows it: symlinkInTree for every component between root and the file.
func inRoot(root, path string) error {
	if followLinksOut.Load() {
		return nil
	}
	return within(root, path, "resolves to")
}

// within refuses path when, both resolved and made absolute, it lies outside directory
// root; verb says how the path got there in the error ("points to" for a link, "resolves
// to" for a path through linked directories).
func within(root, path, verb string) error {
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	dir, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	if target, err = filepath.Abs(target); err != nil {
		return err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return err
	}
	rel, err := filepath.Rel(dir, target)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%w: it %s %s, outside %s (--follow-links reads it)", ErrSymlinkOut, verb, Echo(target), Echo(dir))
	}
	return nil
}

// ErrTruncated marks a compressed file that ends before its compressed stream does (a cut
// download): its content would be silently short.
var ErrTruncated = errors.New("truncated compressed file")

// decompress wraps f in the decompressor its name asks for: NAME.gz (RFC 1952, every member
// read) or NAME.zst (RFC 8878); any other name is read as is. The callers' size limit then
// applies to the decompressed stream, so a small file expanding past it (a zip bomb) is
// refused as too large.
func decompress(path string, f *os.File) (io.ReadCloser, error) {
	switch {
	case strings.HasSuffix(path, ".gz"):
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", truncated(err))
		}
		return &zReader{r: zr, f: f, close: zr.Close, kind: "gzip"}, nil
	case strings.HasSuffix(path, ".zst"):
		// One decoder goroutine and a bounded window: a hostile frame cannot ask for more.
		zr, err := zstd.NewReader(f, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(64<<20))
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		return &zReader{r: zr, f: f, close: func() error { zr.Close(); return nil }, kind: "zstd"}, nil
	}
	return f, nil
}

// zReader reads a decompressor and closes it and the file under it.
type zReader struct {
	r     io.Reader
	f     *os.File
	close func() error
	kind  string
}

func (z *zReader) Read(p []byte) (int, error) {
	n, err := z.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%s: %w", z.kind, truncated(err))
	}
	return n, err
}

func (z *zReader) Close() error {
	_ = z.close()
	return z.f.Close()
}

// truncated names an unexpected end of a compressed stream as ErrTruncated.
func truncated(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w (%v)", ErrTruncated, err)
	}
	return err
}
