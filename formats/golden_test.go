package formats

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// -update rewrites the golden files under testdata/formats/golden and the schemas under schema/.
var update = flag.Bool("update", false, "rewrite golden files and JSON Schemas from the current code")

const (
	goodDir   = "../testdata/formats/good"
	goldenDir = "../testdata/formats/golden"
	schemaDir = "../schema"
)

// goodFixtures returns the good fixture paths (YAML and JSON), sorted.
func goodFixtures(t testing.TB) []string {
	t.Helper()
	var files []string
	for _, pat := range []string{"*.yaml", "*.yml", "*.json"} {
		m, err := filepath.Glob(filepath.Join(goodDir, pat))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	sort.Strings(files)
	if len(files) == 0 {
		t.Fatalf("no fixtures in %s", goodDir)
	}
	return files
}

func readFixture(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// loadGood decodes a good fixture by base name (e.g. "plan.json"), failing the test on error.
func loadGood(t testing.TB, name string) Document {
	t.Helper()
	doc, err := Decode(name, readFixture(t, filepath.Join(goodDir, name)), inTree)
	if err != nil {
		t.Fatalf("decode good fixture %s:\n%v", name, err)
	}
	return doc
}

func goldenName(fixture string) string {
	base := filepath.Base(fixture)
	return strings.TrimSuffix(base, filepath.Ext(base)) + ".json"
}

// TestGoldenRoundTrip decodes every good fixture, marshals it and compares the bytes with its
// golden file; decoding the golden file must give an equal value that marshals identically.
func TestGoldenRoundTrip(t *testing.T) {
	kinds := map[string]bool{}
	for _, f := range goodFixtures(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			doc := loadGood(t, filepath.Base(f))
			kinds[doc.GetKind()] = true
			out, err := Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join(goldenDir, goldenName(f))
			if *update {
				if err := os.MkdirAll(goldenDir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := WriteAtomic(golden, out); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run `go test ./formats -update` to create it)", err)
			}
			if !bytes.Equal(out, want) {
				t.Fatalf("Marshal(%s) differs from %s; if the change is intended, run `go test ./formats -update`\n%s", f, golden, firstDiff(out, want))
			}
			again, err := Decode(filepath.Base(golden), want, inTree)
			if err != nil {
				t.Fatalf("decode golden: %v", err)
			}
			if !reflect.DeepEqual(withoutSectionFuncs(doc), withoutSectionFuncs(again)) {
				t.Fatalf("decoding the golden file gives a different value:\n got %#v\nwant %#v", again, doc)
			}
			out2, err := Marshal(again)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out2, want) {
				t.Fatalf("Marshal is not stable across a round trip\n%s", firstDiff(out2, want))
			}
		})
	}
	for _, k := range Kinds {
		if !kinds[k] {
			t.Errorf("no good fixture of kind %s in %s", k, goodDir)
		}
	}
}

// firstDiff shows the first differing line of two texts.
func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return "line " + strconv.Itoa(i+1) + ":\n got: " + gl + "\nwant: " + wl
		}
	}
	return "(no line differs)"
}

// TestGoodFixturesAreConsistent: the good fixtures describe one deployment, so the cross-file
// checks must find nothing.
func TestGoodFixturesAreConsistent(t *testing.T) {
	docs := map[string]Document{}
	for _, f := range goodFixtures(t) {
		docs[filepath.Base(f)] = loadGood(t, filepath.Base(f))
	}
	if errs := CheckSet(docs, inTree); len(errs) > 0 {
		t.Fatalf("CheckSet over the good fixtures:\n%v", errs)
	}
}

// withoutSectionFuncs is doc with its registered sections' Sections reduced to their keys:
// a Section made by SectionOf holds functions, which reflect.DeepEqual never finds equal.
func withoutSectionFuncs(doc Document) Document {
	strip := func(sv SectionValues) SectionValues {
		if sv == nil {
			return nil
		}
		out := SectionValues{}
		for k, v := range sv {
			out[k] = SectionValue{Section: nil, Value: v.Value}
		}
		return out
	}
	switch d := doc.(type) {
	case *Plan:
		c := *d
		c.Sections = strip(d.Sections)
		if e := d.Provenance.Embedded; e != nil && e.Workload != nil {
			ec, wc := *e, *e.Workload
			wc.Sections = strip(wc.Sections)
			ec.Workload = &wc
			c.Provenance.Embedded = &ec
		}
		return &c
	case *Workload:
		c := *d
		c.Sections = strip(d.Sections)
		return &c
	}
	return doc
}
