package solver

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// lpLineWidth is where WriteLP wraps long expressions; the CPLEX LP format
// allows at most 510 characters per line.
const lpLineWidth = 100

// WriteLP writes the model in CPLEX LP format (readable by HiGHS, CPLEX,
// Gurobi, SCIP, GLPK). Names are sanitized to the format's character set and
// made unique; unnamed variables and rows become x<i> and c<i>. A ranged row
// lb <= expr <= ub is written as two rows, name~lo and name~hi, because LP
// readers disagree on a double-inequality syntax (HiGHS rejects it).
func (m *Model) WriteLP(w io.Writer) error {
	bw := bufio.NewWriter(w)
	vn := lpNames(len(m.cols), func(i int) string { return m.cols[i].name }, "x")
	var raw []string // row names as emitted, ranged rows split in two
	for i, r := range m.rows {
		name := r.name
		if name == "" {
			name = "c" + strconv.Itoa(i)
		}
		if isRanged(r.lb, r.ub) {
			raw = append(raw, name+"~lo", name+"~hi")
		} else {
			raw = append(raw, name)
		}
	}
	rn := lpNames(len(raw), func(i int) string { return raw[i] }, "c")

	if m.name != "" {
		fmt.Fprintf(bw, "\\ Model %s\n", strings.Map(printable, m.name))
	}
	if m.sense == Maximize {
		bw.WriteString("Maximize\n")
	} else {
		bw.WriteString("Minimize\n")
	}
	var obj []Term
	for j, c := range m.cols {
		if c.obj != 0 {
			obj = append(obj, Term{Var(j), c.obj})
		}
	}
	e := &lpExpr{w: bw, names: vn}
	e.start(" obj:")
	e.terms(obj)
	if m.offset != 0 || len(obj) == 0 {
		e.item(lpSigned(m.offset, len(obj) == 0))
	}
	bw.WriteString("\n")

	bw.WriteString("Subject To\n")
	k := 0 // index into rn
	for _, r := range m.rows {
		lo, hi := r.lb, r.ub
		if isRanged(lo, hi) {
			e.row(rn[k], r.terms, ">= "+lpNum(lo))
			e.row(rn[k+1], r.terms, "<= "+lpNum(hi))
			k += 2
			continue
		}
		var rel string
		switch {
		case lo == hi:
			rel = "= " + lpNum(hi)
		case !math.IsInf(hi, 1):
			rel = "<= " + lpNum(hi)
		case !math.IsInf(lo, -1):
			rel = ">= " + lpNum(lo)
		default: // free row
			rel = ">= -inf"
		}
		e.row(rn[k], r.terms, rel)
		k++
	}

	bw.WriteString("Bounds\n")
	for j, c := range m.cols {
		if c.integer && c.lb == 0 && c.ub == 1 {
			continue // Binary section implies [0, 1]
		}
		n := vn[j]
		switch {
		case c.lb == c.ub:
			fmt.Fprintf(bw, " %s = %s\n", n, lpNum(c.lb))
		case math.IsInf(c.lb, -1) && math.IsInf(c.ub, 1):
			fmt.Fprintf(bw, " %s free\n", n)
		case c.lb == 0 && math.IsInf(c.ub, 1):
			// the format's default bounds
		case math.IsInf(c.ub, 1):
			fmt.Fprintf(bw, " %s >= %s\n", n, lpNum(c.lb))
		default:
			fmt.Fprintf(bw, " %s <= %s <= %s\n", lpNum(c.lb), n, lpNum(c.ub))
		}
	}
	for _, sec := range []struct {
		title  string
		binary bool
	}{{"General", false}, {"Binary", true}} {
		var names []string
		for j, c := range m.cols {
			if c.integer && (c.lb == 0 && c.ub == 1) == sec.binary {
				names = append(names, vn[j])
			}
		}
		if len(names) == 0 {
			continue
		}
		bw.WriteString(sec.title + "\n")
		e.start(" ")
		for _, n := range names {
			e.item(n)
		}
		bw.WriteString("\n")
	}
	bw.WriteString("End\n")
	return bw.Flush()
}

// lpExpr writes space-separated items, wrapping lines at lpLineWidth.
type lpExpr struct {
	w     *bufio.Writer
	names []string
	col   int
	sep   bool // the next item needs a separating space
}

func (e *lpExpr) start(prefix string) {
	e.w.WriteString(prefix)
	e.col = len(prefix)
	e.sep = prefix != "" && !strings.HasSuffix(prefix, " ")
}

func (e *lpExpr) item(s string) {
	if e.col > 3 && e.col+1+len(s) > lpLineWidth {
		e.w.WriteString("\n   ")
		e.col, e.sep = 3, true
	}
	if e.sep {
		e.w.WriteByte(' ')
		e.col++
	}
	e.sep = true
	e.w.WriteString(s)
	e.col += len(s)
}

// row writes " name: terms rel" and ends the line.
func (e *lpExpr) row(name string, ts []Term, rel string) {
	e.start(" " + name + ":")
	if len(ts) == 0 {
		e.item("0 " + firstVar(e.names)) // the format needs at least one term
	}
	e.terms(ts)
	e.item(rel)
	e.w.WriteString("\n")
}

func isRanged(lb, ub float64) bool {
	return lb != ub && !math.IsInf(lb, -1) && !math.IsInf(ub, 1)
}

func (e *lpExpr) terms(ts []Term) {
	for k, t := range ts {
		e.item(lpCoef(t.Coef, k == 0) + e.names[t.Var])
	}
}

// lpCoef renders a coefficient prefix: "x", "- x", "+ 3 x", "2.5 x".
func lpCoef(c float64, first bool) string {
	switch {
	case c == 1 && first:
		return ""
	case c == 1:
		return "+ "
	case c == -1:
		return "- "
	}
	return lpSigned(c, first) + " "
}

// lpSigned renders a number with an explicit sign unless it comes first.
func lpSigned(c float64, first bool) string {
	switch {
	case c < 0:
		return "- " + lpNum(-c)
	case first:
		return lpNum(c)
	}
	return "+ " + lpNum(c)
}

// lpNum formats a number so that it reads back exactly.
func lpNum(x float64) string {
	switch {
	case math.IsInf(x, 1):
		return "inf"
	case math.IsInf(x, -1):
		return "-inf"
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

func firstVar(vn []string) string {
	if len(vn) == 0 {
		return "x0"
	}
	return vn[0]
}

// lpReserved are words the LP grammar gives a meaning, matched case-insensitively.
var lpReserved = map[string]bool{
	"free": true, "inf": true, "infinity": true, "st": true, "s.t.": true,
	"subject": true, "to": true, "such": true, "that": true, "bounds": true,
	"bound": true, "general": true, "generals": true, "gen": true,
	"binary": true, "binaries": true, "bin": true, "end": true, "semi": true,
	"semis": true, "semi-continuous": true, "minimize": true, "maximize": true,
	"minimum": true, "maximum": true, "min": true, "max": true, "obj": true,
}

// lpNames sanitizes and deduplicates names. Allowed characters are letters,
// digits and !"#$%&()/,.;?@_`'{}|~; a name may not start with a digit or a
// period, nor look like an exponent (e/E followed by a digit).
func lpNames(n int, name func(int) string, prefix string) []string {
	out := make([]string, n)
	seen := make(map[string]bool, n)
	for i := range n {
		s := sanitizeLPName(name(i))
		if s == "" {
			s = prefix + strconv.Itoa(i)
		}
		if seen[s] {
			base := s
			for k := 1; seen[s]; k++ {
				s = base + "~" + strconv.Itoa(k)
			}
		}
		seen[s] = true
		out[i] = s
	}
	return out
}

func sanitizeLPName(s string) string {
	if s == "" {
		return ""
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			strings.ContainsRune("!\"#$%&()/,.;?@_`'{}|~", r)):
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s = b.String()
	if len(s) > 255 {
		s = s[:255]
	}
	c := s[0]
	expLike := (c == 'e' || c == 'E') && (len(s) == 1 || s[1] >= '0' && s[1] <= '9')
	if c >= '0' && c <= '9' || c == '.' || expLike || lpReserved[strings.ToLower(s)] {
		s = "_" + s
	}
	return s
}

// printable keeps the model name on one comment line.
func printable(r rune) rune {
	if r < 32 || r == 127 {
		return ' '
	}
	return r
}
