package solver

import (
	"errors"
	"fmt"
	"math"
)

// maxValidateErrors caps how many problems Validate reports at once.
const maxValidateErrors = 10

// MaxCoef is the largest matrix coefficient magnitude a model may hold.
// HiGHS refuses larger ones (its large_matrix_value); they are almost always
// a big-M gone wrong.
const MaxCoef = 1e15

// Validate checks the model for values no solver can interpret: NaN
// anywhere, infinite objective or matrix coefficients, lb > ub, a lower
// bound of +Inf or an upper bound of -Inf, and rows referring to variables
// that do not exist. Each problem names the variable or row; the returned
// error wraps ErrInvalidModel.
func (m *Model) Validate() error {
	var errs []error
	add := func(format string, args ...any) bool {
		errs = append(errs, fmt.Errorf("%w: model %q: "+format, append([]any{ErrInvalidModel, m.name}, args...)...))
		return len(errs) < maxValidateErrors
	}
	if !finite(m.offset) {
		add("objective offset is %v", m.offset)
	}
	for j, c := range m.cols {
		what := fmt.Sprintf("var %d (%q)", j, c.name)
		if msg := boundsProblem(c.lb, c.ub); msg != "" && !add("%s: %s", what, msg) {
			return errors.Join(errs...)
		}
		if !finite(c.obj) && !add("%s: objective coefficient is %v", what, c.obj) {
			return errors.Join(errs...)
		}
	}
	for i, r := range m.rows {
		what := fmt.Sprintf("row %d (%q)", i, r.name)
		if msg := boundsProblem(r.lb, r.ub); msg != "" && !add("%s: %s", what, msg) {
			return errors.Join(errs...)
		}
		for _, t := range r.terms {
			if t.Var < 0 || int(t.Var) >= len(m.cols) {
				if !add("%s: term refers to var %d, model has %d vars", what, t.Var, len(m.cols)) {
					return errors.Join(errs...)
				}
				continue
			}
			if !(math.Abs(t.Coef) <= MaxCoef) && !add("%s: coefficient of var %d (%q) is %v", what, t.Var, m.cols[t.Var].name, t.Coef) {
				return errors.Join(errs...)
			}
		}
	}
	return errors.Join(errs...)
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// boundsProblem describes what is wrong with a bound pair, or returns "".
func boundsProblem(lb, ub float64) string {
	switch {
	case math.IsNaN(lb) || math.IsNaN(ub):
		return fmt.Sprintf("NaN bound [%v, %v]", lb, ub)
	case math.IsInf(lb, 1):
		return "lower bound is +Inf"
	case math.IsInf(ub, -1):
		return "upper bound is -Inf"
	case lb > ub:
		return fmt.Sprintf("lower bound %v > upper bound %v", lb, ub)
	}
	return ""
}
