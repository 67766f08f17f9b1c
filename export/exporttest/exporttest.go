// Package exporttest holds what the exporters' tests share: picking an exporter by target,
// reading a plan fixture, and comparing an export with its golden directory (rewritten under
// each test package's -update flag).
package exporttest

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/plan-dev/plan/export"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
)

// Exporter returns the exporter of target among es, failing the test when there is none.
func Exporter(t testing.TB, es []export.Exporter, target string) export.Exporter {
	t.Helper()
	for _, e := range es {
		if e.Target == target {
			return e
		}
	}
	t.Fatalf("no %s exporter", target)
	return export.Exporter{}
}

// ReadPlan reads a plan fixture, failing the test when it does not decode.
func ReadPlan(t testing.TB, path string) *formats.Plan {
	t.Helper()
	p, err := formats.ReadInto[*formats.Plan](path, intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// ReadDir reads every file below dir, keyed by its slash-separated path relative to dir.
func ReadDir(dir string) (export.Files, error) {
	files := export.Files{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		files[filepath.ToSlash(rel)] = b
		return err
	})
	return files, err
}

// Golden compares files with the golden directory dir, after rewriting dir from files when
// update is set. pkg is the test package's import path relative to the module root
// (./export/qlm), named in the hint of every failure.
func Golden(t *testing.T, dir string, files export.Files, update bool, pkg string) {
	t.Helper()
	hint := "(run go test " + pkg + " -update)"
	if update {
		_ = os.RemoveAll(dir)
		if err := export.Write(dir, files, true); err != nil {
			t.Fatal(err)
		}
	}
	want, err := ReadDir(dir)
	if err != nil {
		t.Fatalf("%v %s", err, hint)
	}
	if !reflect.DeepEqual(files.Names(), want.Names()) {
		t.Fatalf("files %v, golden %v %s", files.Names(), want.Names(), hint)
	}
	for _, n := range files.Names() {
		if !bytes.Equal(files[n], want[n]) {
			t.Errorf("%s differs from %s %s:\n%s", n, dir, hint, files[n])
		}
	}
}
