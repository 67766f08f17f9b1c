package formats

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Marshal renders a document as indented JSON with a trailing newline. encoding/json sorts
// map keys, so equal documents give byte-identical output.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Digest is the sha256 (hex) of a value's canonical JSON.
func Digest(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// WriteFile validates a document, then writes it as JSON atomically: a temp file in the same
// directory is synced and renamed over path, so readers never see a partial file and a
// failure leaves any previous file intact. A plan or workload is validated with the
// registered sections secs (Validate), so a section is checked by its system before it is
// written.
func WriteFile(path string, doc Document, secs *SectionSet) error {
	if errs := Validate(doc, secs); len(errs) > 0 {
		return errs.WithFile(path)
	}
	data, err := Marshal(doc)
	if err != nil {
		return err
	}
	return WriteAtomic(path, data)
}

// CheckWritable reports, before any work is done, why WriteFile could not create path: the
// path is empty or a directory, its directory does not exist or is not a directory, or no
// file can be created there. Commands call it first so a bad -o fails fast with nothing
// written. The error names the problem, not the path (callers prefix the flag and the path).
//
// It is one half of the rule every output follows (CheckOutputDir is the other): the output
// itself may be created or replaced, the directory it goes in must already exist — missing
// parents are never created, so a typo fails instead of writing somewhere unexpected.
func CheckWritable(path string) error {
	if path == "" {
		return errors.New("must not be empty")
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return errors.New("is a directory")
	}
	if err := checkReplaceable(path); err != nil {
		return err
	}
	return checkParent(path)
}

// ErrOutputNotRegular is the error for an output path that exists and is not a regular file (a
// device, a FIFO, a socket, or a link to one). Outputs are written by renaming a finished
// temporary file over the path, which would replace the node itself: `-o /dev/null` run as
// root would leave the whole machine a regular file at /dev/null.
var ErrOutputNotRegular = errors.New("not a regular file: writing the output would replace it (outputs are renamed into place); name a regular file")

// checkReplaceable refuses a path that exists and is not a regular file or a directory
// (whose own checks are the callers'), following links: the one test every writer applies
// (CheckWritable before any work, WriteAtomic before it renames).
func checkReplaceable(path string) error {
	for _, stat := range []func(string) (fs.FileInfo, error){os.Lstat, os.Stat} {
		st, err := stat(path)
		if err != nil {
			continue // absent, or a dangling link: the rename creates a file
		}
		switch t := st.Mode().Type(); {
		case t&fs.ModeNamedPipe != 0:
			return fmt.Errorf("a named pipe (FIFO): %w", ErrOutputNotRegular)
		case t&fs.ModeCharDevice != 0:
			return fmt.Errorf("a character device: %w", ErrOutputNotRegular)
		case t&fs.ModeDevice != 0:
			return fmt.Errorf("a device: %w", ErrOutputNotRegular)
		case t&fs.ModeSocket != 0:
			return fmt.Errorf("a socket: %w", ErrOutputNotRegular)
		case t&fs.ModeIrregular != 0:
			return fmt.Errorf("a file of unknown type: %w", ErrOutputNotRegular)
		}
	}
	return nil
}

// CheckOutputDir reports, before any work is done, why a directory of outputs (a report)
// could not be written at path: the path is empty or exists and is not a directory, its
// parent does not exist or is not a directory (only the output directory itself is created,
// as WriteFile creates only the file), or no file can be created there.
func CheckOutputDir(path string) error {
	if path == "" {
		return errors.New("must not be empty")
	}
	st, err := os.Stat(path)
	switch {
	case err == nil && !st.IsDir():
		return errors.New("is not a directory")
	case err == nil:
		return probe(path)
	case !errors.Is(err, fs.ErrNotExist):
		return unwrapPath(err)
	}
	return checkParent(filepath.Clean(path))
}

// checkParent checks that the directory holding path exists, is a directory and takes files.
func checkParent(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: no such directory", dir)
	case errors.Is(err, syscall.ENOTDIR) || (err == nil && !st.IsDir()):
		return fmt.Errorf("%s: not a directory", dir)
	case err != nil:
		return fmt.Errorf("%s: %w", dir, unwrapPath(err))
	}
	if err := probe(dir); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	return nil
}

// probe creates and removes a temporary file in dir.
func probe(dir string) error {
	tmp, err := os.CreateTemp(dir, ".plan-probe-*")
	if err != nil {
		return fmt.Errorf("cannot create files: %w", unwrapPath(err))
	}
	name := tmp.Name()
	tmp.Close()
	return os.Remove(name)
}

// unwrapPath drops the operation and path of an *fs.PathError (the caller names the path).
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// WriteAtomic writes bytes to path through a temp file and rename.
func WriteAtomic(path string, data []byte) error {
	if err := checkReplaceable(path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	name := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(name)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(name, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(name, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	ok = true
	return nil
}
