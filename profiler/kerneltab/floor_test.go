package kerneltab

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/plan-dev/plan/profiler/gpus"
)

// TestSuspectsListed lists, per GPU and table slice kind, the measured points beyond
// SuspectFloorMultiple of their floor, the points read at a faster point of more work
// (OutOfOrder), and the slices set aside, into testdata/suspects.txt (-update rewrites it):
// a change of the tables or of the floor shows in review.
func TestSuspectsListed(t *testing.T) {
	var b strings.Builder
	fmt.Fprintf(&b, "# Kernel-table points against their floors (profiler/kerneltab/floor.go): beyond %g× the\n", SuspectFloorMultiple)
	b.WriteString("# roofline floor plus the table's launch floor, out of order by more than 10% along a padded axis,\n")
	b.WriteString("# and the MoE slices set aside (most points suspect). Written by\n")
	b.WriteString("# `go test ./profiler/kerneltab -run TestSuspectsListed -update`.\n")
	for _, gpu := range GPUs() {
		tb, err := Load(gpu)
		if err != nil {
			t.Fatal(err)
		}
		count := map[string][2]int{}
		for _, s := range tb.Suspects() {
			k := s.Point.Table + "[" + kindOf(s.Point) + "] beyond floor"
			c := count[k]
			c[0]++
			count[k] = c
		}
		for _, o := range tb.OutOfOrder() {
			k := o.Point.Table + "[" + kindOf(o.Point) + "] out of order along " + o.Axis
			c := count[k]
			c[1]++
			count[k] = c
		}
		keys := make([]string, 0, len(count))
		for k := range count {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(&b, "\n%s\n", gpu)
		for _, k := range keys {
			fmt.Fprintf(&b, "  %-60s %6d\n", k, count[k][0]+count[k][1])
		}
		set := tb.suspectMoESlices()
		names := make([]string, 0, len(set))
		for k := range set {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			s := set[k]
			fmt.Fprintf(&b, "  set aside: moe[%s]: median %.1f× floor (BF16 %.1f×), %d of %d points beyond\n", k, s.MedianRatio, s.BF16Ratio, s.Suspect, s.Of)
		}
	}
	path := filepath.Join("testdata", "suspects.txt")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil || string(want) != b.String() {
		t.Errorf("%s differs from the tables' check (err %v): run go test ./profiler/kerneltab -run TestSuspectsListed -update and review the diff", path, err)
	}
}

// kindOf is a point's slice kind for the summary: the dtype of a GEMM or MoE slice, the
// head size and KV dtype of attention.
func kindOf(p Point) string {
	if p.Table == TableMoE {
		if s, ok := parseMoESlice(p.Slice); ok {
			return string(s.DType)
		}
	}
	return p.Slice
}

// TestFloorBelowMeasured: the floor is a floor — on every GPU, the BF16 GEMM and attention
// points the step model reads most sit at or above it (a few small kernels beat HBM from
// L2, so the median is checked, not every point), and every kind's median ratio is finite.
func TestFloorBelowMeasured(t *testing.T) {
	for _, gpu := range GPUs() {
		tb, err := Load(gpu)
		if err != nil {
			t.Fatal(err)
		}
		g, _ := gpus.Lookup(gpu)
		for _, table := range []string{TableGEMM, TableGenAttn, TableContextAttn} {
			launch := tb.fastestUs(table)
			var r []float64
			for _, slice := range tb.sliceKeys(table) {
				if !strings.Contains(slice, string(BF16)) {
					continue
				}
				tb.slices[table+"/"+slice].each(func(x []float64, ms float64) {
					if f, ok := floorUs(g, launch, table, slice, x); ok {
						r = append(r, ms*1e3/f)
					}
				})
			}
			if len(r) == 0 {
				t.Fatalf("%s %s: no BF16 points", gpu, table)
			}
			slices.Sort(r)
			if med := r[len(r)/2]; med < 1 || med > SuspectFloorMultiple {
				t.Errorf("%s %s BF16: median time/floor %.2f, want in [1, %g]", gpu, table, med, SuspectFloorMultiple)
			}
		}
	}
}

// TestSetAside: a quantized MoE layer whose measured slice is set aside is the BF16
// measurement of its shape scaled by the floors — faster than BF16, never faster than its
// own floor — and says so; BF16 slices are never set aside.
func TestSetAside(t *testing.T) {
	tb, err := Load("H100")
	if err != nil {
		t.Fatal(err)
	}
	for k := range tb.suspectMoESlices() {
		if strings.HasPrefix(k, string(BF16)+"/") {
			t.Errorf("H100 moe[%s]: a BF16 slice set aside", k)
		}
	}
	// Llama-4-Scout's experts at TP 2: 16 experts of 8192, top-1, hidden 5120.
	scout := MoEShape{DType: FP8, Hidden: 5120, Inter: 8192, TopK: 1, Experts: 16, TP: 2, EP: 1}
	bf := scout
	bf.DType = BF16
	g, _ := gpus.Lookup("H100")
	for _, tokens := range []int{1, 8, 64, 512} {
		fp8Us, p, err := tb.MoEUs(scout, tokens)
		if err != nil {
			t.Fatal(err)
		}
		bfUs, _, err := tb.MoEUs(bf, tokens)
		if err != nil {
			t.Fatal(err)
		}
		floor, _ := floorUs(g, tb.fastestUs(TableMoE), TableMoE, scout.slice(), []float64{float64(tokens)})
		if p.SetAside == "" || !strings.Contains(p.String(), "set aside") {
			t.Errorf("%d tokens: %s: does not say its slice was set aside", tokens, p)
		}
		if !(fp8Us < bfUs && fp8Us >= floor) {
			t.Errorf("%d tokens: FP8 %.0f µs, BF16 %.0f µs, floor %.0f µs: want floor ≤ FP8 < BF16", tokens, fp8Us, bfUs, floor)
		}
	}
}
