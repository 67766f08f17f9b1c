package solver

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// lpGoldenModel exercises every construct WriteLP emits.
func lpGoldenModel() *Model {
	m := NewModel("golden: all LP constructs", Maximize)
	x := m.AddContinuous("x", 0, Inf, 3)
	y := m.AddContinuous("y[1,2]", -Inf, Inf, -2.5) // free, bad characters
	z := m.AddContinuous("e1", -5, 5, 0)            // exponent-like name
	w := m.AddContinuous("1st var", -Inf, 10, 1e-7) // leading digit, space
	f := m.AddContinuous("fixed", 2.25, 2.25, 1)    // fixed
	b := m.AddBinary("pick", 4)                     // Binary section
	g := m.AddInteger("count", -3, 12, 1)           // General section
	h := m.AddInteger("free", 0, Inf, 0)            // reserved word
	d := m.AddContinuous("x", 1, Inf, 0)            // duplicate name
	u := m.AddContinuous("", 0, 1, -1)              // unnamed
	v := m.AddInteger("büro:+", 0, 1, 0)            // non-ASCII, colon; binary bounds
	m.SetObjOffset(-12.5)
	m.AddRow("le", -Inf, 10, Term{x, 1}, Term{y, 2}, Term{z, -1})
	m.AddRow("ge", -4, Inf, Term{x, -1}, Term{w, 0.1})
	m.AddRow("eq", 8.25, 8.25, Term{f, 1}, Term{b, 1}, Term{g, -3})
	m.AddRow("range", -1.5, 2.5, Term{h, 1}, Term{d, 1}, Term{u, 1e12})
	m.AddRow("", -Inf, Inf, Term{v, 1}) // free row, unnamed
	m.AddRow("empty", 0, Inf)           // no terms
	m.AddRow("le", -Inf, 1, Term{x, 1}) // duplicate row name
	var long []Term
	for _, t := range []Var{x, y, z, w, f, b, g, h, d, u, v} {
		long = append(long, Term{t, float64(t) + 0.5}, Term{t, 1.0 / 3})
	}
	m.AddRow("long", -Inf, 100, long...)
	return m
}

func TestWriteLPGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := lpGoldenModel().WriteLP(&buf); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "golden.lp")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./solver -run WriteLP -update)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("WriteLP output differs from %s (rerun with -update if intended):\n%s", golden, buf.String())
	}
}

func TestWriteLPMinimizeEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := NewModel("", Minimize).WriteLP(&buf); err != nil {
		t.Fatal(err)
	}
	want := "Minimize\n obj: 0\nSubject To\nBounds\nEnd\n"
	if buf.String() != want {
		t.Errorf("empty model:\n%q\nwant\n%q", buf.String(), want)
	}
}

func TestSanitizeLPName(t *testing.T) {
	for in, want := range map[string]string{
		"abc": "abc", "a b": "a_b", "1x": "_1x", ".x": "_.x", "e": "_e", "E12": "_E12",
		"edge": "edge", "x[1]": "x_1_", "free": "_free", "INF": "_INF", "a:b": "a_b",
		"ü": "_", "st": "_st", "x_1.y": "x_1.y",
	} {
		if got := sanitizeLPName(in); got != want {
			t.Errorf("sanitizeLPName(%q) = %q, want %q", in, got, want)
		}
	}
	names := lpNames(4, func(i int) string { return []string{"a", "a", "", "a~1"}[i] }, "x")
	if fmt.Sprint(names) != "[a a~1 x2 a~1~1]" {
		t.Errorf("lpNames dedupe = %v", names)
	}
}
