package dyorcsec

import (
	"math"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/formats"
)

// validateWorkflows checks DyOrc's workload section: services with sane sizes and latencies,
// and apps whose steps (or bounded loop, DyOrc §2.1) form an acyclic graph of known services.
func validateWorkflows(c *formats.Checker, w *Workflows, p string) {
	eachNamed(c, formats.Field(p, "services"), "service", w.Services, func(np string, s Service) {
		c.NonNegative(formats.Field(np, "weights_gb"), s.WeightsGB)
		c.NonNegative(formats.Field(np, "act_gb"), s.ActGB)
		c.AtLeast(formats.Field(np, "max_batch"), int64(s.MaxBatch), 1)
		if s.Latency != nil {
			c.Microseconds(formats.Field(np, "latency.base_us"), s.Latency.BaseUs)
			c.Microseconds(formats.Field(np, "latency.per_item_us"), s.Latency.PerItemUs)
		}
		c.NonNegative(formats.Field(np, "out_kb"), s.OutKB)
		if !formats.Finite(s.WorkSpread) || s.WorkSpread < 0 || s.WorkSpread >= 1 {
			c.Add(formats.Field(np, "work_spread"), s.WorkSpread, "must be at least 0 and below 1 (a request's work is drawn from [1−s, 1+s] of the nominal)")
		}
		if s.OutKind != "" && s.OutKind != "tensor" && s.OutKind != "general" {
			c.Add(formats.Field(np, "out_kind"), s.OutKind, "must be tensor or general (or omitted)")
		}
	})
	eachNamed(c, formats.Field(p, "apps"), "app", w.Apps, func(np string, a App) {
		if a.SLO < 0 {
			c.Add(formats.Field(np, "slo"), a.SLO, "must be > 0 (or omitted)")
		}
		c.BoundedDuration(formats.Field(np, "slo"), a.SLO)
		c.Rate(formats.Field(np, "rate_rps"), a.RateRPS)
		switch {
		case len(a.Steps) > 0 && a.Loop != nil:
			c.Add(formats.Field(np, "loop"), nil, "set steps or loop, not both")
		case len(a.Steps) == 0 && a.Loop == nil:
			c.Add(np, nil, "must set steps or loop")
		}
		ids := &formats.Names{}
		if len(a.Steps) > 0 {
			validateSteps(c, w, formats.Field(np, "steps"), a.Steps, ids, "")
		}
		if l := a.Loop; l != nil {
			lp := formats.Field(np, "loop")
			c.Check(ids, formats.Field(lp, "id"), l.ID)
			if l.MaxIter < 1 {
				c.Add(formats.Field(lp, "max_iter"), l.MaxIter, "unbounded loop: max_iter must be >= 1 (DyOrc loops are bounded)")
			}
			if l.MaxIter >= 1 && len(l.PStop) != l.MaxIter {
				c.Add(formats.Field(lp, "p_stop"), len(l.PStop), "length must be max_iter = %d", l.MaxIter)
			}
			for k, x := range l.PStop {
				c.InRange(formats.Index(formats.Field(lp, "p_stop"), k), x, 0, 1)
			}
			if len(l.Body) == 0 {
				c.Add(formats.Field(lp, "body"), nil, "must list at least one step")
			} else {
				validateSteps(c, w, formats.Field(lp, "body"), l.Body, ids, l.ID)
			}
		}
	})
}

// eachNamed checks the map at path p, of what ("service"), to define at least one, each under
// a non-empty name, and calls check with each entry's path and value, in name order.
func eachNamed[V any](c *formats.Checker, p, what string, m map[string]V, check func(np string, v V)) {
	if len(m) == 0 {
		c.Add(p, nil, "must define at least one %s", what)
	}
	for _, name := range formats.SortedKeys(m) {
		np := formats.KeyPath(p, name)
		if name == "" {
			c.Add(np, name, "%s name must not be empty", what)
		}
		check(np, m[name])
	}
}

// validateSteps checks a step list; loopID is set for a loop body, where "loopID.prev" is valid.
func validateSteps(c *formats.Checker, w *Workflows, p string, steps []Step, ids *formats.Names, loopID string) {
	local := map[string]bool{}
	ambiguous := false // an empty or repeated id makes the graph meaningless
	for j := range steps {
		c.Check(ids, formats.Field(formats.Index(p, j), "id"), steps[j].ID)
		ambiguous = ambiguous || steps[j].ID == "" || local[steps[j].ID]
		local[steps[j].ID] = true
	}
	succ := map[string][]string{}
	var order []string
	before := map[string]bool{}
	if loopID != "" {
		before[loopID] = true
	}
	for j := range steps {
		s := &steps[j]
		jp := formats.Index(p, j)
		order = append(order, s.ID)
		validateWorkflowStep(c, jp, s, before)
		before[s.ID] = true
		switch {
		case s.Service != "" && len(s.Choice) > 0:
			c.Add(formats.Field(jp, "choice"), nil, "set svc or choice, not both")
		case s.Service == "" && len(s.Choice) == 0:
			c.Add(jp, nil, "must set svc or choice")
		}
		if _, ok := w.Services[s.Service]; s.Service != "" && !ok {
			c.Add(formats.Field(jp, "svc"), s.Service, "unknown service: not in workflows.services")
		}
		for _, name := range formats.SortedKeys(s.Choice) {
			cp := formats.KeyPath(formats.Field(jp, "choice"), name)
			if _, ok := w.Services[name]; !ok {
				c.Add(cp, name, "unknown service: not in workflows.services")
			}
			c.Positive(cp, s.Choice[name])
		}
		c.InRange(formats.Field(jp, "p"), s.P, 0, 1)
		if s.P != 0 && s.When == "" {
			c.Add(formats.Field(jp, "p"), s.P, "p is the probability of the when guard: set when")
		}
		if s.Fanout < 0 {
			c.Add(formats.Field(jp, "fanout"), s.Fanout, "must be >= 1 (or omitted)")
		}
		for k, ref := range s.After {
			rp := formats.Index(formats.Field(jp, "after"), k)
			base, _ := ParseStepRef(ref)
			switch {
			case ref == StepInput:
			case base == "":
				c.Add(rp, ref, "must name a step, optionally with a ? or * suffix, or be $in")
			case loopID != "" && base == loopID+".prev":
			case base == s.ID:
				c.Add(rp, ref, "a step cannot depend on itself")
			case !local[base]:
				c.Add(rp, ref, "unknown step: not a step of this app (use $in for the request input)")
			default:
				succ[base] = append(succ[base], s.ID)
			}
		}
	}
	if cyc := formats.FindCycle(order, succ); cyc != nil && !ambiguous {
		c.Add(p, nil, "steps form a cycle: %s", strings.Join(cyc, " -> "))
	}
}

// probSumTol is how far choice weights may sum from 1 (rounding in hand-written files).
const probSumTol = 1e-6

// validateWorkflowStep adds DyOrc's bad-input rules for one step: a guard that
// cannot be evaluated (bad syntax, or a reference to a step that has not run before it) and
// choice weights that do not sum to 1. before holds the ids of the steps listed earlier in
// the same list (and, in a loop body, the loop's own id for "loop.prev" guards).
func validateWorkflowStep(c *formats.Checker, jp string, s *Step, before map[string]bool) {
	if s.When != "" {
		g, err := ParseGuard(s.When)
		switch {
		case err != nil:
			c.Add(formats.Field(jp, "when"), s.When, "guard cannot be evaluated: %v", err)
		case g.Ref == s.ID:
			c.Add(formats.Field(jp, "when"), s.When, "guard cannot be evaluated: it reads the step's own output before the step runs")
		case g.Ref != "in" && !before[g.Ref]:
			c.Add(formats.Field(jp, "when"), s.When, "guard cannot be evaluated: %q is neither in (the request input) nor a step listed before this one", g.Ref)
		}
	}
	if len(s.Choice) > 0 {
		sum := 0.0
		for _, w := range s.Choice {
			sum += w
		}
		if math.Abs(sum-1) > probSumTol {
			c.AddRaw(formats.Field(jp, "choice"), strconv.FormatFloat(sum, 'g', 6, 64), "branch probabilities must sum to 1 (they sum to %g)", sum)
		}
	}
}
