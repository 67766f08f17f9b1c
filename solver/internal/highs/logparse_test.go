package highs

import (
	"math"
	"strings"
	"testing"
)

// Lines from a HiGHS 1.15.1 MIP log.
var logSamples = []string{
	" z       0       0         0   0.00%   inf             -0                 Large        0      0      0         0     0.0s",
	" J       0       0         0 100.00%   inf             2                  Large        0      0      0         0     0.1s",
	"         1       0         1 100.00%   2               2                  0.00%        0      0      0         0     0.1s",
	" R       0       0         0   0.00%   18031.8918      17074              5.61%        0      0      0        12     0.0s",
	" L       0       0         0   0.00%   17952.534612    17829              0.69%      266     13      6       359     0.4s",
	"       532     211       141  12.70%   -1285.463372    -inf                 inf     1520     47    129     12533    11.2s",
	"Src  Proc. InQueue |  Leaves   Expl. | BestBound       BestSol              Gap |   Cuts   InLp Confl. | LpIters     Time",
	"        Nodes      |    B&B Tree     |            Objective Bounds              |  Dynamic Constraints |       Work      ",
	"Solving report",
	"  Status            Optimal",
	"2 rows, 2 cols, 4 nonzeros 0s",
	"",
}

func TestParseLogLine(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		line string
		ok   bool
		want NodeRow
	}{
		{logSamples[0], true, NodeRow{Source: "z", BestBound: inf, BestSol: 0, Gap: inf, HasSolution: true}},
		{logSamples[2], true, NodeRow{Nodes: 1, Leaves: 1, Explored: 1, BestBound: 2, BestSol: 2, HasSolution: true, Time: 0.1}},
		{logSamples[4], true, NodeRow{Source: "L", BestBound: 17952.534612, BestSol: 17829, Gap: 0.0069, HasSolution: true,
			Cuts: 266, InLP: 13, Conflicts: 6, LPIters: 359, Time: 0.4}},
		{logSamples[5], true, NodeRow{Nodes: 532, InQueue: 211, Leaves: 141, Explored: 0.127, BestBound: -1285.463372,
			BestSol: math.Inf(-1), Gap: inf, Cuts: 1520, InLP: 47, Conflicts: 129, LPIters: 12533, Time: 11.2}},
	}
	for _, s := range logSamples[6:] {
		tests = append(tests, struct {
			line string
			ok   bool
			want NodeRow
		}{s, false, NodeRow{}})
	}
	for _, tc := range tests {
		got, ok := ParseLogLine(tc.line)
		if ok != tc.ok {
			t.Errorf("ParseLogLine(%q) ok = %v", tc.line, ok)
			continue
		}
		if !ok {
			continue
		}
		if !approxRow(got, tc.want) {
			t.Errorf("ParseLogLine(%q)\n got %+v\nwant %+v", tc.line, got, tc.want)
		}
	}
}

func approxRow(a, b NodeRow) bool {
	eq := func(x, y float64) bool { return x == y || math.Abs(x-y) < 1e-9 }
	return a.Source == b.Source && a.Nodes == b.Nodes && a.InQueue == b.InQueue && a.Leaves == b.Leaves &&
		eq(a.Explored, b.Explored) && eq(a.BestBound, b.BestBound) && eq(a.BestSol, b.BestSol) &&
		eq(a.Gap, b.Gap) && a.HasSolution == b.HasSolution && a.Cuts == b.Cuts && a.InLP == b.InLP &&
		a.Conflicts == b.Conflicts && a.LPIters == b.LPIters && eq(a.Time, b.Time)
}

func FuzzParseLogLine(f *testing.F) {
	for _, s := range logSamples {
		f.Add(s)
	}
	f.Add(" H  1e3 0 0 1% nan nan nan% 0 0 0 0 0s")
	f.Fuzz(func(t *testing.T, line string) {
		row, ok := ParseLogLine(line)
		if !ok {
			if row != (NodeRow{}) {
				t.Fatalf("rejected line returned %+v", row)
			}
			return
		}
		if row.Nodes < 0 || row.InQueue < 0 || row.Leaves < 0 || row.LPIters < 0 || row.Cuts < 0 {
			t.Fatalf("negative counter in %+v", row)
		}
		if math.IsNaN(row.BestBound) || math.IsNaN(row.BestSol) || math.IsNaN(row.Gap) || !(row.Gap >= 0 || row.Gap < 0) {
			t.Fatalf("NaN in %+v", row)
		}
		if math.IsNaN(row.Explored) || math.IsInf(row.Explored, 0) || !(row.Time >= 0) {
			t.Fatalf("bad explored/time in %+v", row)
		}
		if row.HasSolution != !math.IsInf(row.BestSol, 0) {
			t.Fatalf("HasSolution inconsistent in %+v", row)
		}
	})
}

func TestLineWriter(t *testing.T) {
	var got []string
	w := &LineWriter{Fn: func(s string) { got = append(got, s) }}
	for _, chunk := range []string{"ab", "c\nde", "f\n\ng", "h"} {
		w.Write([]byte(chunk))
	}
	w.Flush()
	if strings.Join(got, "|") != "abc|def||gh" {
		t.Errorf("lines = %q", got)
	}
	got = nil
	w.Write([]byte(strings.Repeat("z", maxLine+10)))
	if len(got) != 1 || len(got[0]) != maxLine+10 {
		t.Errorf("oversized line delivered as %d pieces", len(got))
	}
}
