package formats

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Guard is a parsed `when` guard of a workflow step (our file format for the conditional
// steps of DyOrc §2.1): a reference to the
// request input ("in") or an earlier step's output, a dotted field path, and an optional
// comparison with a number. "ask.need" tests a field for truth; "in.images>0" compares.
type Guard struct {
	// Ref is "in" or a step id.
	Ref string
	// Fields is the dotted path after Ref (may be empty).
	Fields []string
	// Op is one of > >= < <= == != ("" = a truth test).
	Op    string
	Value float64
}

// guardOps lists the comparison operators, two-character ones first so ">=" is not read as ">".
var guardOps = []string{">=", "<=", "==", "!=", ">", "<"}

// ParseGuard parses a `when` guard. It only checks the syntax; ValidateWorkflowGuard checks
// that the reference can be evaluated within its app.
func ParseGuard(s string) (Guard, error) {
	var g Guard
	expr := strings.TrimSpace(s)
	lhs := expr
	for _, op := range guardOps {
		if i := strings.Index(expr, op); i >= 0 {
			lhs = strings.TrimSpace(expr[:i])
			rhs := strings.TrimSpace(expr[i+len(op):])
			x, err := strconv.ParseFloat(rhs, 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return g, fmt.Errorf("right-hand side %q of %s is not a finite number", rhs, op)
			}
			g.Op, g.Value = op, x
			break
		}
	}
	if lhs == "" {
		return g, fmt.Errorf("no output reference before the comparison")
	}
	parts := strings.Split(lhs, ".")
	for _, p := range parts {
		if !isGuardIdent(p) {
			return g, fmt.Errorf("%q is not an identifier (a guard is ref.field[.field] [op number])", p)
		}
	}
	g.Ref, g.Fields = parts[0], parts[1:]
	if g.Ref == "in" && len(g.Fields) == 0 {
		return g, fmt.Errorf("the request input has no value of its own: name a field (in.FIELD)")
	}
	return g, nil
}

func isGuardIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'):
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// probSumTol is how far choice weights may sum from 1 (rounding in hand-written files).
const probSumTol = 1e-6

// validateWorkflowStep adds DyOrc's bad-input rules for one step (issue 14): a guard that
// cannot be evaluated (bad syntax, or a reference to a step that has not run before it) and
// choice weights that do not sum to 1. before holds the ids of the steps listed earlier in
// the same list (and, in a loop body, the loop's own id for "loop.prev" guards).
func validateWorkflowStep(v *validator, jp string, s *Step, before map[string]bool) {
	if s.When != "" {
		g, err := ParseGuard(s.When)
		switch {
		case err != nil:
			v.add(field(jp, "when"), s.When, "guard cannot be evaluated: %v", err)
		case g.Ref == s.ID:
			v.add(field(jp, "when"), s.When, "guard cannot be evaluated: it reads the step's own output before the step runs")
		case g.Ref != "in" && !before[g.Ref]:
			v.add(field(jp, "when"), s.When, "guard cannot be evaluated: %q is neither in (the request input) nor a step listed before this one", g.Ref)
		}
	}
	if len(s.Choice) > 0 {
		sum := 0.0
		for _, w := range s.Choice {
			sum += w
		}
		if math.Abs(sum-1) > probSumTol {
			v.add(field(jp, "choice"), raw(strconv.FormatFloat(sum, 'g', 6, 64)), "branch probabilities must sum to 1 (they sum to %g)", sum)
		}
	}
}

// checkWorkflowMemory reports workflow services whose weights and activations fit on no GPU
// of any given cluster (DyOrc: a service is hosted whole by one totipotent worker).
func checkWorkflowMemory(v *validator, w *Workload, clusters []namedCluster) {
	wf := w.Workflows
	if wf == nil || len(clusters) == 0 {
		return
	}
	var largest int64
	var where []string
	for _, nc := range clusters {
		for _, g := range nc.c.GPUs {
			m := g.MemoryBytes
			if m == 0 {
				m = KnownGPUs[g.Type]
			}
			largest = max(largest, m)
		}
		where = append(where, nc.file)
	}
	if largest <= 0 {
		return
	}
	for _, name := range sortedKeys(wf.Services) {
		s := wf.Services[name]
		need := ServiceBytes(s)
		if need > largest {
			v.add(field(keyPath("workflows.services", name), "weights_gb"), s.WeightsGB,
				"service needs %.1f GB (weights + activations) but the largest GPU in %s has %.1f GB", float64(need)/1e9, strings.Join(where, ", "), float64(largest)/1e9)
		}
	}
}

// ServiceBytes is the GPU memory a service occupies: its weights plus its activation
// reserve (act_gb, or 20 % of the weights when not given: our default, as DyOrc gives none).
func ServiceBytes(s Service) int64 {
	act := s.ActGB
	if act == 0 {
		act = 0.2 * s.WeightsGB
	}
	return int64((s.WeightsGB + act) * 1e9)
}
