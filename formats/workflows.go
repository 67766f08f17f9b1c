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

// ServiceBytes is the GPU memory a service occupies: its weights plus its activation
// reserve (act_gb, or 20 % of the weights when not given: our default, as DyOrc gives none).
func ServiceBytes(s Service) int64 {
	act := s.ActGB
	if act == 0 {
		act = 0.2 * s.WeightsGB
	}
	return int64((s.WeightsGB + act) * 1e9)
}
