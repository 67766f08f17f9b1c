package explain

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Lines is the explanation as text, one line each, for the error solve exits 2 with.
func (ex *Explanation) Lines() []string {
	out := []string{fmt.Sprintf("what would make it feasible (searched with %d solves, each relaxation bisected to %.0f%% and checked: the solve succeeds at it and fails at %.0f%% of it):",
		ex.Solves, 100*ex.Tolerance, 100*ex.CheckShare)}
	c := ex.Closest
	line := "  closest plan: " + c.Basis
	if c.Summary != "" {
		line += ": " + c.Summary
	}
	out = append(out, line)
	for _, m := range c.Misses {
		out = append(out, "    "+m)
	}
	if r := ex.SLO; r != nil {
		out = append(out, "  SLO: "+r.sloLine())
	}
	if len(ex.EachSLO) > 0 || ex.EachSLONote != "" {
		out = append(out, "  each SLO alone, the others as given:")
		for _, e := range ex.EachSLO {
			out = append(out, "    "+e.line())
		}
		if ex.EachSLONote != "" {
			out = append(out, "    "+ex.EachSLONote)
		}
	}
	if r := ex.Rate; r != nil {
		out = append(out, "  rate: "+r.rateLine())
	}
	switch {
	case len(ex.GPUs) > 0:
		out = append(out, "  GPUs to add, with the SLOs and rates as given (cheapest first):")
		for _, g := range ex.GPUs {
			out = append(out, "    "+g.line())
		}
	case ex.GPUsNone != "":
		out = append(out, "  GPUs to add: "+ex.GPUsNone)
	}
	if ex.CutShort != "" {
		out = append(out, "  the search was cut short: "+ex.CutShort+" (a later --time-limit or a smaller input lets it finish)")
	}
	return out
}

func (r *Relaxation) sloLine() string {
	if !r.Found {
		return "no relaxation: " + r.None
	}
	s := fmt.Sprintf("every SLO ×%s succeeds (%s)", fmtScale(r.Scale), describeSLOs(r.SLOs))
	return s + r.checkPhrase(fmt.Sprintf("×%s", fmtScale(r.Checked)))
}

func (e SLOAlone) line() string {
	r := e.Relax
	if !r.Found {
		return fmt.Sprintf("%s %s: %s", e.Target.who(), e.Target.Value, r.None)
	}
	s := fmt.Sprintf("%s %s → %s (×%s) succeeds", e.Target.who(), e.Target.Value, r.SLOs[0].Relaxed, fmtScale(r.Scale))
	return s + r.checkPhrase(fmt.Sprintf("×%s", fmtScale(r.Checked)))
}

func (r *Relaxation) rateLine() string {
	if !r.Found {
		return "no relaxation: " + r.None
	}
	parts := make([]string, len(r.Rates))
	for i, t := range r.Rates {
		parts[i] = fmt.Sprintf("%s %.4g → %.4g req/s", t.Name, t.RateRPS, t.Relaxed)
	}
	s := fmt.Sprintf("every stated rate ×%s succeeds with the SLOs as given (%s)", fmtScale(r.Scale), strings.Join(parts, ", "))
	return s + r.checkPhrase(fmt.Sprintf("×%s", fmtScale(r.Checked)))
}

// checkPhrase says how the stated factor was checked.
func (r *Relaxation) checkPhrase(at string) string {
	switch {
	case !r.Narrowed:
		return "; not narrowed further: the search stopped first"
	case r.AtGiven:
		return "; 95% of it is past the targets as given, which fail"
	case r.CheckedOK:
		return "; " + at + " fails"
	default:
		return "; not checked"
	}
}

func (g GPUAdd) line() string {
	s := fmt.Sprintf("+%d %s (%s %d → %d)", g.Add, g.Type, g.Field, g.Have, g.Have+g.Add)
	if g.PricePerHour != nil {
		s += fmt.Sprintf(", %s %.4g/h", g.Currency, *g.PricePerHour)
	}
	if g.Narrowed {
		s += fmt.Sprintf("; +%d fails", g.Add-1)
		if g.Add == 1 {
			s = strings.TrimSuffix(s, "; +0 fails") + "; the cluster as given fails"
		}
	} else {
		s += "; not narrowed further: the search stopped first"
	}
	if !g.Bounded && g.Field == "count" {
		s += fmt.Sprintf(" (available not stated: searched up to +%d)", g.Max)
	}
	return s
}

// fmtScale is a factor with up to four significant digits.
func fmtScale(k float64) string { return strconv.FormatFloat(k, 'g', 4, 64) }

// roundUp3 rounds k up to three significant digits.
func roundUp3(k float64) float64 { return round3(k, math.Ceil) }

// roundDown3 rounds k down to three significant digits.
func roundDown3(k float64) float64 { return round3(k, math.Floor) }

func round3(k float64, f func(float64) float64) float64 {
	if k <= 0 || math.IsInf(k, 0) || math.IsNaN(k) {
		return k
	}
	e := math.Pow(10, 2-math.Floor(math.Log10(k)))
	// The small nudge keeps a factor already at three digits (4.73 stored as 4.7299…) where
	// it is.
	r := f(k*e-1e-9*sign(f)) / e
	if v, err := strconv.ParseFloat(strconv.FormatFloat(r, 'g', 3, 64), 64); err == nil {
		return v
	}
	return r
}

// sign is +1 for rounding up (ceil) and −1 for rounding down, so the nudge goes against it.
func sign(f func(float64) float64) float64 {
	if f(0.5) == 1 {
		return 1
	}
	return -1
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
