package formats

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "plan.json")
	if err := WriteAtomic(path, []byte("one\n")); err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomic(path, []byte("two\n")); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil || string(data) != "two\n" {
		t.Fatalf("content %q, %v", data, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	if got := dirNames(t, dir); len(got) != 1 {
		t.Errorf("directory holds %v, want only plan.json", got)
	}
}

// A failed write leaves no temp file behind and the previous content intact.
func TestWriteAtomicFailureLeavesNoTempFile(t *testing.T) {
	dir := t.TempDir()
	// The rename fails: the target is a non-empty directory.
	target := filepath.Join(dir, "out.json")
	if err := os.MkdirAll(filepath.Join(target, "child"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := WriteAtomic(target, []byte("data"))
	if err == nil {
		t.Fatal("writing over a directory succeeded")
	}
	if !strings.Contains(err.Error(), "write "+target) {
		t.Errorf("error does not name the file: %v", err)
	}
	if got := dirNames(t, dir); len(got) != 1 || got[0] != "out.json" {
		t.Errorf("temp file left behind: %v", got)
	}
	// The temp file cannot even be created: the directory does not exist.
	if err := WriteAtomic(filepath.Join(dir, "missing", "x.json"), []byte("data")); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
	if got := dirNames(t, dir); len(got) != 1 {
		t.Errorf("directory changed: %v", got)
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cluster.json")
	c := loadGood(t, "cluster.yaml").(*Cluster)
	if err := WriteFile(path, c, inTree); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	back, err := ReadInto[*Cluster](path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := Marshal(back); !bytes.Equal(out, before) {
		t.Error("WriteFile output does not round-trip")
	}
	// An invalid document is not written: the old file stays, no temp file appears.
	c.GPUs[0].Count = -3
	err = WriteFile(path, c, inTree)
	if !errors.Is(err, ErrInvalid) || err.Error() != path+": gpus[0].count: -3: must be >= 0" {
		t.Fatalf("err = %v", err)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Error("a failed WriteFile changed the file")
	}
	if got := dirNames(t, dir); len(got) != 1 {
		t.Errorf("directory holds %v", got)
	}
}

func TestDigest(t *testing.T) {
	a, err := Digest(loadGood(t, "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Digest(loadGood(t, "cluster.yaml"))
	if a != b || !digestRE.MatchString(a) {
		t.Fatalf("digests %q, %q", a, b)
	}
}

// TestOutputRule: one rule for every output, file or directory: the output
// itself may be created (or a file replaced), the directory it goes in must exist. simulate
// --report created missing parents while solve -o refused them, and skipped "" silently.
func TestOutputRule(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path      string
		asFile    string // CheckWritable's error ("" = fine)
		asDirWant string // CheckOutputDir's error
	}{
		{"", "must not be empty", "must not be empty"},
		{filepath.Join(dir, "new"), "", ""},
		{dir, "is a directory", ""},
		{file, "", "is not a directory"},
		{filepath.Join(dir, "missing", "x"), "no such directory", "no such directory"},
		{filepath.Join(file, "x"), "not a directory", "not a directory"},
	}
	for _, c := range cases {
		for _, k := range []struct {
			name  string
			check func(string) error
			want  string
		}{{"file", CheckWritable, c.asFile}, {"dir", CheckOutputDir, c.asDirWant}} {
			err := k.check(c.path)
			if (err == nil) != (k.want == "") || (err != nil && !strings.Contains(err.Error(), k.want)) {
				t.Errorf("%s %q: err = %v, want %q", k.name, c.path, err, k.want)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); err == nil {
		t.Error("a check created its output")
	}
}
