// Package sectiontest runs a system's table-driven bad-input cases against formats' good
// fixtures (testdata/formats/good): start from a good document, break one thing (as a Go
// caller can, NaN included) and expect exactly these messages, validated with the system's
// Sections. The cases moved out of formats' tests with their system's rules.
package sectiontest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
)

// GoodDir holds formats' good fixtures, relative to the module's root: the sections'
// packages sit at different depths (formats/sections/*, formats/llmspec), so Load finds the
// root from the test's directory.
const GoodDir = "testdata/formats/good"

// Case is one bad-input case.
type Case struct {
	Name   string
	File   string // good fixture (base name) to start from
	Mutate func(formats.Document)
	Want   []string
}

// Load decodes a good fixture by base name with secs, failing the test on error.
func Load(t testing.TB, name string, secs *formats.SectionSet) formats.Document {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(moduleRoot(t), GoodDir, name))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := formats.Decode(name, data, secs)
	if err != nil {
		t.Fatalf("decode good fixture %s:\n%v", name, err)
	}
	return doc
}

// Run runs the cases: each must give exactly its messages (file-prefixed, in order).
func Run(t *testing.T, secs *formats.SectionSet, cases []Case) {
	t.Helper()
	if len(cases) == 0 {
		t.Fatal("no cases")
	}
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.Name] {
			t.Fatalf("duplicate case name %q", c.Name)
		}
		seen[c.Name] = true
		t.Run(c.Name, func(t *testing.T) {
			doc := Load(t, c.File, secs)
			c.Mutate(doc)
			var msgs []string
			for _, e := range formats.Validate(doc, secs).WithFile(c.File) {
				msgs = append(msgs, e.Error())
			}
			if strings.Join(msgs, "\n") != strings.Join(c.Want, "\n") {
				t.Errorf("got:\n\t%s\nwant:\n\t%s", strings.Join(msgs, "\n\t"), strings.Join(c.Want, "\n\t"))
			}
		})
	}
}

// Workload adapts a mutation of a workload to a Case's Mutate.
func Workload(f func(*formats.Workload)) func(formats.Document) {
	return func(d formats.Document) { f(d.(*formats.Workload)) }
}

// Plan adapts a mutation of a plan to a Case's Mutate.
func Plan(f func(*formats.Plan)) func(formats.Document) {
	return func(d formats.Document) { f(d.(*formats.Plan)) }
}

// CrossCase is one case of a system's checks against the other files given beside a
// document: the good fixtures files (base names), a mutation of them, and exactly the
// messages formats.CheckSet must then give.
type CrossCase struct {
	Name   string
	Files  []string
	Mutate func(map[string]formats.Document)
	Want   []string
}

// RunCross runs the cases: each set of good fixtures must check clean with secs, and give
// exactly its messages once mutated.
func RunCross(t *testing.T, secs *formats.SectionSet, cases []CrossCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			docs := map[string]formats.Document{}
			for _, f := range tc.Files {
				docs[f] = Load(t, f, secs)
			}
			if errs := formats.CheckSet(docs, secs); len(errs) != 0 {
				t.Fatalf("good files: %v", errs)
			}
			tc.Mutate(docs)
			var got []string
			for _, e := range formats.CheckSet(docs, secs) {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.Want, "\n") {
				t.Errorf("got\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(tc.Want, "\n\t"))
			}
		})
	}
}

// moduleRoot is the nearest directory above the test's that holds go.mod.
func moduleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
}
