package solver

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// EnvWriteLP names the environment variable that makes every Solve write its
// model as an LP file into the directory it names (see the package doc).
const EnvWriteLP = "PLAN_WRITE_LP"

// writeLPEnv writes m to $PLAN_WRITE_LP/<name>-<hash>.lp if the variable is
// set. The name is deterministic: the sanitized model name and the first 16
// hex digits of the sha256 of the file's content, so the same model always
// lands in the same file (written once) and different models never collide.
func writeLPEnv(m *Model) error {
	dir := os.Getenv(EnvWriteLP)
	if dir == "" {
		return nil
	}
	if _, err := WriteLPFile(dir, m); err != nil {
		return fmt.Errorf("solver: %s=%s: %w", EnvWriteLP, dir, err)
	}
	return nil
}

// WriteLPFile writes m in LP format into dir under the deterministic name
// PLAN_WRITE_LP uses, creating dir if needed, and returns the file's path.
// An existing file of that name already holds the same model and is kept.
func WriteLPFile(dir string, m *Model) (string, error) {
	var buf bytes.Buffer
	if err := m.WriteLP(&buf); err != nil {
		return "", err
	}
	sum := sha256.Sum256(buf.Bytes())
	path := filepath.Join(dir, lpFileName(m.name)+"-"+hex.EncodeToString(sum[:8])+".lp")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// Concurrent solves of the same model may race to write it: each writes
	// its own temporary file and renames it, so readers never see half a file.
	f, err := os.CreateTemp(dir, ".tmp-*.lp")
	if err != nil {
		return "", err
	}
	_, err = f.Write(buf.Bytes())
	if err == nil {
		err = f.Chmod(0o644) // CreateTemp's 0600 would hide the file from other users
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return "", err
	}
	return path, nil
}

// lpFileName turns a model name into a safe file name stem.
func lpFileName(name string) string {
	s := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, name)
	s = strings.TrimLeft(s, ".")
	if len(s) > 64 {
		s = s[:64]
	}
	if s == "" {
		s = "model"
	}
	return s
}
