package highs

import (
	"bytes"
	"math"
	"strconv"
	"strings"
)

// NodeRow is one row of the HiGHS MIP progress table:
//
//	Src  Proc. InQueue |  Leaves   Expl. | BestBound  BestSol  Gap |   Cuts   InLp Confl. | LpIters  Time
//	 H       0       0         0   0.00%   0          1398.8   100.00%       0      0      0        12  0.0s
//
// Bounds and solution values are in the model's own objective sense.
type NodeRow struct {
	Source      string  // heuristic/event code ("H", "T", ...); "" for periodic rows
	Nodes       int64   // nodes processed ("Proc.")
	InQueue     int64   // open nodes
	Leaves      int64   // leaves of the B&B tree
	Explored    float64 // fraction of the tree explored, 0..1
	BestBound   float64 // ±Inf if none yet
	BestSol     float64 // ±Inf if no incumbent yet
	Gap         float64 // relative gap as a fraction; +Inf when HiGHS prints "Large" or "inf"
	HasSolution bool    // BestSol is finite
	Cuts        int64
	InLP        int64
	Conflicts   int64
	LPIters     int64
	Time        float64 // seconds since the run started
}

// ParseLogLine recognizes a MIP progress row and parses it. Every other
// log line (headers, banners, reports) yields ok == false.
func ParseLogLine(line string) (row NodeRow, ok bool) {
	f := strings.Fields(line)
	if len(f) == 13 {
		if !isSource(f[0]) {
			return NodeRow{}, false
		}
		row.Source, f = f[0], f[1:]
	}
	if len(f) != 12 || !strings.HasSuffix(f[3], "%") || !strings.HasSuffix(f[11], "s") {
		return NodeRow{}, false
	}
	ints := []*int64{&row.Nodes, &row.InQueue, &row.Leaves}
	for i, p := range ints {
		if *p, ok = parseCount(f[i]); !ok {
			return NodeRow{}, false
		}
	}
	for i, p := range []*int64{&row.Cuts, &row.InLP, &row.Conflicts, &row.LPIters} {
		if *p, ok = parseCount(f[7+i]); !ok {
			return NodeRow{}, false
		}
	}
	var err error
	if row.Explored, ok = parsePercent(f[3]); !ok {
		return NodeRow{}, false
	}
	if row.BestBound, err = parseValue(f[4]); err != nil {
		return NodeRow{}, false
	}
	if row.BestSol, err = parseValue(f[5]); err != nil {
		return NodeRow{}, false
	}
	switch g := f[6]; g {
	case "Large", "inf", "-", "":
		row.Gap = math.Inf(1)
	default:
		if row.Gap, ok = parsePercent(g); !ok {
			return NodeRow{}, false
		}
	}
	if row.Time, err = strconv.ParseFloat(strings.TrimSuffix(f[11], "s"), 64); err != nil || !(row.Time >= 0) {
		return NodeRow{}, false
	}
	row.HasSolution = !math.IsInf(row.BestSol, 0) && !math.IsNaN(row.BestSol)
	return row, true
}

// isSource reports whether s is a progress-row source code: one or two
// letters (HiGHS uses single letters; two are tolerated for future codes).
func isSource(s string) bool {
	if len(s) == 0 || len(s) > 2 {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

func parseCount(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err == nil {
		return n, n >= 0
	}
	// Very large counters may be printed in floating-point notation.
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v >= 0 && v < math.MaxInt64) {
		return 0, false
	}
	return int64(v), true
}

func parsePercent(s string) (float64, bool) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil || len(s) < 2 || s[len(s)-1] != '%' || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v / 100, true
}

// parseValue parses an objective value; HiGHS prints "inf"/"-inf" for none.
func parseValue(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err == nil && math.IsNaN(v) {
		return 0, strconv.ErrSyntax
	}
	return v, err
}

// LineWriter is an io.Writer that calls Fn with every complete line written
// to it (without the newline). Lines are split at '\n'; a final partial line
// is delivered by Flush.
type LineWriter struct {
	Fn      func(line string)
	partial []byte
}

// maxLine bounds the partial-line buffer; a longer "line" is delivered in pieces.
const maxLine = 64 << 10

func (w *LineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.partial = append(w.partial, p...)
			if len(w.partial) > maxLine {
				w.Flush()
			}
			break
		}
		if len(w.partial) > 0 {
			w.partial = append(w.partial, p[:i]...)
			w.Fn(string(w.partial))
			w.partial = w.partial[:0]
		} else {
			w.Fn(string(p[:i]))
		}
		p = p[i+1:]
	}
	return n, nil
}

// Flush delivers a pending partial line, if any.
func (w *LineWriter) Flush() {
	if len(w.partial) > 0 {
		w.Fn(string(w.partial))
		w.partial = w.partial[:0]
	}
}
