package llm

import (
	"encoding/csv"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/plan-dev/plan/profiler/gpus"
	"github.com/plan-dev/plan/profiler/roofline"
)

// refRow is one row of testdata/h100-kernels.csv.
type refRow struct {
	class, model, cell, term, source string
	tp, count                        int
	us                               float64 // NaN: no published number
}

func readReference(t *testing.T) []refRow {
	t.Helper()
	f, err := os.Open("testdata/h100-kernels.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.Comment = '#'
	recs, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var out []refRow
	for i, rec := range recs[1:] {
		tp, err1 := strconv.Atoi(rec[2])
		count, err2 := strconv.Atoi(rec[6])
		if err1 != nil || err2 != nil {
			t.Fatalf("row %d: tp %q count %q", i+2, rec[2], rec[6])
		}
		us := math.NaN()
		if rec[5] != "" {
			if us, err = strconv.ParseFloat(rec[5], 64); err != nil {
				t.Fatalf("row %d: us %q", i+2, rec[5])
			}
		} else if !strings.HasPrefix(rec[7], "n/a: ") {
			t.Fatalf("row %d: no number and no \"n/a: reason\"", i+2)
		}
		out = append(out, refRow{class: rec[0], model: rec[1], tp: tp, cell: rec[3], term: rec[4], us: us, count: count, source: rec[7]})
	}
	return out
}

// cellSize parses "prefill-N" or "decode-bB".
func cellSize(t *testing.T, cell string) (prefill bool, n int) {
	t.Helper()
	phase, size, _ := strings.Cut(cell, "-")
	n, err := strconv.Atoi(strings.TrimPrefix(size, "b"))
	if err != nil || (phase != "prefill" && phase != "decode") {
		t.Fatalf("cell %q", cell)
	}
	return phase == "prefill", n
}

// modelTerm is the step model's value for a reference row: per-layer kernels times the
// row's count, all-reduces likewise, attention and total per step.
func modelTerm(t *testing.T, r refRow) float64 {
	t.Helper()
	m, err := Lookup(r.model)
	if err != nil {
		t.Fatal(err)
	}
	h100, _ := gpus.Lookup("H100")
	d, err := NewDeployment(m, h100, r.tp, roofline.LinkNVLink)
	if err != nil {
		t.Fatal(err)
	}
	// The reference checks the roofline kernel model, which times GPUs without measured
	// tables (the H100's own steps come from its tables, checked in profiler/kerneltab).
	d.tab = nil
	prefill, n := cellSize(t, r.cell)
	var b Breakdown
	if prefill {
		b = d.Prefill(n, 0)
	} else {
		b = d.Decode(n, 2048)
	}
	c := float64(r.count)
	switch r.term {
	case "gemm":
		return d.LayerGEMMUs(n) * c
	case "elementwise":
		return d.LayerElementwiseUs(n) * c
	case "allreduce":
		if r.count == 1 {
			return b.AllReduce
		}
		if d.TP == 1 {
			return 0
		}
		return d.AllReduceUs(n) * c
	case "attention":
		return b.Attention
	case "overhead":
		return b.Overhead
	case "total":
		return b.Kernels()
	}
	t.Fatalf("term %q", r.term)
	return 0
}

// TestH100KernelReference: every term of every cell the published H100 kernel timings cover
// (8B-class at TP1 and 70B-class at TP4; prefill 512/2,048/8,192 at batch 1, decode at batch
// 1/8/32/128 and context 2,048) is within 10% of the reference, and the fixture names a
// reason for every cell and term it has no number for.
func TestH100KernelReference(t *testing.T) {
	rows := readReference(t)
	seen := map[string]bool{}
	compared := 0
	for _, r := range rows {
		seen[r.class+"/"+r.cell+"/"+r.term] = true
		got := modelTerm(t, r)
		if math.IsNaN(r.us) {
			t.Logf("%-7s %-13s %-11s model %9.0f µs   ref  —  (%s)", r.class, r.cell, r.term, got, r.source)
			continue
		}
		compared++
		want := r.us * float64(r.count)
		if want == 0 {
			if got != 0 {
				t.Errorf("%s %s %s: model %.0f µs, want 0 (%s)", r.class, r.cell, r.term, got, r.source)
			}
			continue
		}
		ratio := got / want
		t.Logf("%-7s %-13s %-11s model %9.0f µs   ref %9.0f µs   ×%.3f (%s)", r.class, r.cell, r.term, got, want, ratio, r.source)
		if ratio < 0.9 || ratio > 1.1 {
			t.Errorf("%s %s %s: model %.0f µs, reference %.0f µs (%s): ×%.3f, outside ±10%%", r.class, r.cell, r.term, got, want, r.source, ratio)
		}
	}
	for _, class := range []string{"8b-tp1", "70b-tp4"} {
		for _, cell := range []string{"prefill-512", "prefill-2048", "prefill-8192", "decode-b1", "decode-b8", "decode-b32", "decode-b128"} {
			for _, term := range []string{"gemm", "attention", "allreduce", "elementwise", "overhead", "total"} {
				if !seen[class+"/"+cell+"/"+term] {
					t.Errorf("fixture: no row for %s %s %s (a number or \"n/a: reason\")", class, cell, term)
				}
			}
		}
	}
	if compared < 30 {
		t.Errorf("only %d cells compared", compared)
	}
}
