package speedbench

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/sim/simscale"
)

// TestEmbeddedDataMatchesTestdata keeps the embedded copies equal to the testdata files the
// data-plane benchmarks read, so the bench and BenchmarkSimScale run the same cases.
func TestEmbeddedDataMatchesTestdata(t *testing.T) {
	for _, f := range []string{"sim/hc1-100.json", "cascade/golden-plan.json", "dyorc/workload.json", "serve/wide.json"} {
		want, err := os.ReadFile(filepath.Join("..", "..", "testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		got, err := embedded(filepath.Base(f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("data/%s.gz differs from testdata/%s: gzip -9nc testdata/%s > bench/speedbench/data/%s.gz", filepath.Base(f), f, f, filepath.Base(f))
		}
	}
}

func TestReferenceRuns(t *testing.T) {
	line := func(it int, us string) string {
		return "/tmp/x/hc2-g1.lp: objective 2047.561371, " + strconv.Itoa(it) + " iterations, run 300.1 ms, " + us + " µs/iter\n"
	}
	cases := []struct {
		name  string
		out   string
		iters int64
		us    []float64
		err   string
	}{
		{"in order", line(1858, "160.00") + line(1858, "150.50") + line(1858, "170.25"), 1858, []float64{160, 150.5, 170.25}, ""},
		{"other lines ignored", "warning\n" + line(10, "1.5"), 10, []float64{1.5}, ""},
		{"runs disagree", line(1858, "1") + line(1777, "1"), 0, nil, "runs disagree"},
		{"no line", "HiGHS cannot read the model\n", 0, nil, "no result line"},
		{"empty", "", 0, nil, "no result line"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			it, us, err := referenceRuns(c.out)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || it != c.iters || !slices.Equal(us, c.us) {
				t.Fatalf("got %d, %v, %v; want %d, %v", it, us, err, c.iters, c.us)
			}
		})
	}
}

func TestFindReferenceFromEnv(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "lpbench")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(ReferenceEnv, bin)
	if got, why := findReference(); got != bin {
		t.Errorf("got %q (%s), want %s", got, why, bin)
	}
	t.Setenv(ReferenceEnv, dir)
	if got, why := findReference(); got != "" || !strings.Contains(why, "not a file") {
		t.Errorf("a directory: got %q, %q", got, why)
	}
}

func TestPick(t *testing.T) {
	cases := []struct {
		want []string
		got  []string
		err  string
	}{
		{[]string{"sim-pard"}, []string{"sim-pard"}, ""},
		{[]string{"serve"}, []string{"serve-rate", "serve-cpu"}, ""},
		// Table order, each row once.
		{[]string{"serve-cpu", "sim-qlm", "serve"}, []string{"sim-qlm", "serve-rate", "serve-cpu"}, ""},
		{[]string{" SIM-PPIPE "}, []string{"sim-ppipe"}, ""},
		{[]string{"gpu"}, nil, `--measure "gpu"`},
	}
	for _, c := range cases {
		ms, err := pick(c.want)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: err %v, want %q", c.want, err, c.err)
			}
			continue
		}
		var got []string
		for _, m := range ms {
			got = append(got, m.name)
		}
		if err != nil || strings.Join(got, ",") != strings.Join(c.got, ",") {
			t.Errorf("%v: got %v, %v; want %v", c.want, got, err, c.got)
		}
	}
	all, _ := pick(nil)
	if len(all) != len(measureNames()) || len(all) != 11 {
		t.Errorf("all: %d rows", len(all))
	}
}

func TestRow(t *testing.T) {
	atLeast, atMost := target{atLeast: true, bound: 0.9}, target{bound: 1.1}
	cases := []struct {
		name      string
		ours, ref float64
		tgt       target
		ratio     float64 // 0: none
		met       bool
	}{
		{"met from above", 95, 100, atLeast, 0.95, true},
		{"at the bound", 90, 100, atLeast, 0.9, true},
		{"missed from above", 80, 100, atLeast, 0.8, false},
		{"met from below", 105, 100, atMost, 1.05, true},
		{"missed from below", 120, 100, atMost, 1.2, false},
		{"no reference", 120, 0, atMost, 0, false},
		{"NaN reference", 120, math.NaN(), atMost, 0, false},
		{"no ours", 0, 100, atLeast, 0, false},
	}
	for _, c := range cases {
		r := row("m", "u", "ref", c.ours, c.ref, c.tgt, "")
		if c.ratio == 0 {
			if r.Ratio != nil || r.Met {
				t.Errorf("%s: ratio %v met %v, want none", c.name, r.Ratio, r.Met)
			}
			continue
		}
		if r.Ratio == nil || math.Abs(*r.Ratio-c.ratio) > 1e-12 || r.Met != c.met {
			t.Errorf("%s: %+v, want ratio %g met %v", c.name, r, c.ratio, c.met)
		}
	}
	if s := (target{atLeast: true, bound: 0.9}).String(); s != ">= 0.9" {
		t.Errorf("target %q", s)
	}
}

func TestMaxInSLO(t *testing.T) {
	ps := []servePoint{{rate: 100, attainment: 1, requests: 10}, {rate: 200, attainment: 0.95, requests: 20},
		{rate: 300, attainment: 0.995, requests: 30}, {rate: 400, attainment: 1, requests: 0}}
	if got := maxInSLO(ps); got != 300 {
		t.Errorf("got %d, want 300 (the highest in-SLO rate with requests)", got)
	}
	if got := maxInSLO(nil); got != 0 {
		t.Errorf("none: got %d", got)
	}
}

// TestServeCPURow: the CPU row compares the medians of each server's windows (one window's
// outlier moves neither), at the ladder's highest rate both sustain.
func TestServeCPURow(t *testing.T) {
	us := time.Microsecond
	cases := []struct {
		name        string
		ours, floor []time.Duration
		want        float64 // ours' median over the floor's
	}{
		{"one window", []time.Duration{110 * us}, []time.Duration{100 * us}, 1.1},
		{"odd: an outlier each", []time.Duration{104 * us, 150 * us, 106 * us}, []time.Duration{60 * us, 100 * us, 102 * us}, 1.06},
		{"even: the middle two", []time.Duration{100 * us, 120 * us, 110 * us, 500 * us}, []time.Duration{100 * us, 100 * us, 100 * us, 100 * us}, 1.15},
	}
	for _, c := range cases {
		r := (&serveRun{cpuAt: 6000, cpuOurs: c.ours, cpuFloor: c.floor, window: time.Second}).cpuRow()
		if r.Ratio == nil || math.Abs(*r.Ratio-c.want) > 1e-9 {
			t.Errorf("%s: ratio %v, want %g", c.name, r.Ratio, c.want)
		}
		if !strings.Contains(r.Note, "at 6000/s") || !strings.Contains(r.Note, fmt.Sprintf("medians of %d", len(c.ours))) {
			t.Errorf("%s: note %q", c.name, r.Note)
		}
	}
	ps := func(att ...float64) []servePoint {
		var out []servePoint
		for i, a := range att {
			out = append(out, servePoint{rate: 1000 * (i + 1), attainment: a, requests: 10})
		}
		return out
	}
	run := &serveRun{floor: ps(1, 1, 1, 0.5), ours: ps(1, 1, 0.9, 0.5)}
	if i := run.cpuIndex(); i != 1 {
		t.Errorf("cpuIndex %d, want 1 (the highest rate both sustain)", i)
	}
	if i := (&serveRun{floor: ps(0.5, 0.5), ours: ps(1, 1)}).cpuIndex(); i != 0 {
		t.Errorf("none shared: cpuIndex %d, want 0", i)
	}
}

// TestMILPProof: a run proves the gap by its gap, or by infeasibility only on a model cut
// off at its incumbent plus the gap; a time limit or a wider gap proves nothing.
func TestMILPProof(t *testing.T) {
	cases := []struct {
		name   string
		status string
		gap    float64
		cutoff bool
		ok     bool
	}{
		{"gap met", "optimal", 0.0005, false, true},
		{"gap met on a cut-off model", "optimal", 0.001, true, true},
		{"infeasible above the cut-off", "infeasible", math.NaN(), true, true},
		{"infeasible without a cut-off", "infeasible", math.NaN(), false, false},
		{"time limit, no incumbent", "time limit", math.NaN(), true, false},
		{"time limit, gap open", "time limit", 0.004, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, ok := milpProof(c.status, c.gap, c.cutoff, 0.001); ok != c.ok {
				t.Errorf("milpProof(%q, %g, %v) = %v, want %v", c.status, c.gap, c.cutoff, ok, c.ok)
			}
		})
	}
}

// TestCutoffRow: the cut-off row's bound in HiGHS's minimized form, the embedded hc2-g1
// model's included (what lets runMILP read infeasible as the proof).
func TestCutoffRow(t *testing.T) {
	m, err := model("hc2-g1")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		lp    string
		bound float64
		ok    bool
	}{
		{"hc2-g1", string(m.Data()), -2029.6536728946057, true},
		{"maximized", "Maximize\n obj: z\nSubject To\n cutoff: z >= 12.5\nEnd\n", -12.5, true},
		{"minimized", "Minimize\n obj: c\nSubject To\n cutoff: 0.8 gpus_L4 + 0.53 gpus_T4 <= 3.7\nEnd\n", 3.7, true},
		{"no row", "Maximize\n obj: z\nSubject To\n c: z <= 1\nEnd\n", 0, false},
		{"another row's name", "Maximize\n obj: z\nSubject To\n nocutoff: z >= 1\nEnd\n", 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, ok := cutoffRow([]byte(c.lp))
			if ok != c.ok || b != c.bound {
				t.Errorf("cutoffRow = %g, %v; want %g, %v", b, ok, c.bound, c.ok)
			}
		})
	}
}

// TestSimSideRun: a timed run holds the collector off and then gives the process back its
// collector settings (a bench that left GOGC off would grow the heap of whatever ran after
// it), counts the run's events, CPU time and allocation, and collects nothing under the
// memory limit.
func TestSimSideRun(t *testing.T) {
	c, err := simscale.PARD("pard", 1, dataplane.Second/2)
	if err != nil {
		t.Fatal(err)
	}
	prevGC := debug.SetGCPercent(73)
	defer debug.SetGCPercent(prevGC)
	prevLimit := debug.SetMemoryLimit(1 << 40)
	defer debug.SetMemoryLimit(prevLimit)

	s := &simSide{c: c}
	for i := 0; i < 2; i++ {
		if err := s.run(); err != nil {
			t.Fatal(err)
		}
	}
	if got := debug.SetGCPercent(73); got != 73 {
		t.Errorf("GC percent after the runs: %d, want 73 restored", got)
	}
	if got := debug.SetMemoryLimit(1 << 40); got != 1<<40 {
		t.Errorf("memory limit after the runs: %d, want %d restored", got, int64(1<<40))
	}
	if s.runs != 2 || s.events <= 0 || s.cpu <= 0 || s.bytes == 0 {
		t.Errorf("side after two runs: %+v", s)
	}
	if s.cycles != 0 {
		t.Errorf("%d collections during the runs, want none (collector off, far under the limit)", s.cycles)
	}
	if bpe := s.bytesPerEvent(); bpe <= 0 || bpe > 1<<16 {
		t.Errorf("bytes per event %g", bpe)
	}
}

func TestBalancedRuns(t *testing.T) {
	cases := []struct {
		big, one time.Duration
		want     int
	}{
		{16 * time.Second, time.Second, 16},
		{1500 * time.Millisecond, time.Second, 2},
		{1400 * time.Millisecond, time.Second, 1},
		{time.Second, 3 * time.Second, 1}, // the k× case faster: one run each
		{time.Second, 0, 1},
		{time.Hour, time.Millisecond, maxBalancedRuns},
	}
	for _, c := range cases {
		if got := balancedRuns(c.big, c.one); got != c.want {
			t.Errorf("balancedRuns(%v, %v) = %d, want %d", c.big, c.one, got, c.want)
		}
	}
}
