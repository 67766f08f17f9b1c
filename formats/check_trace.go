package formats

import (
	"fmt"
	"strings"
)

// traceTargets is what a trace's requests may name: targets (models or applications) and
// LLM classes, with the files that define them. complete is false when the set cannot be
// known (a plan section whose applications live only in the workload), and the targets are
// then not checked.
type traceTargets struct {
	targets, classes map[string]bool
	files            []string
	kind             string // "workload" or "plan"
	complete         bool
}

func newTraceTargets(kind string) *traceTargets {
	return &traceTargets{targets: map[string]bool{}, classes: map[string]bool{}, kind: kind, complete: true}
}

func (tt *traceTargets) addWorkload(file string, w *Workload) {
	tt.files = append(tt.files, file)
	for _, m := range w.Models {
		tt.targets[m.Name] = true
	}
	for _, p := range w.Pipelines {
		tt.targets[p.Name] = true
	}
	for _, c := range w.Cascades {
		tt.targets[c.Name] = true
	}
	for _, c := range w.LLMClasses {
		tt.targets[c.Model] = true
		tt.classes[c.Name] = true
	}
	if wf := w.Workflows; wf != nil {
		for name := range wf.Apps {
			tt.targets[name] = true
		}
	}
}

// addPlan adds what a plan serves: its PPipe models, PARD applications, cascade task and the
// models of its QLM groups (with their classes). A DyOrc section serves the workflow
// applications of its workload, which the plan does not name: the set is then incomplete.
func (tt *traceTargets) addPlan(file string, p *Plan) {
	tt.files = append(tt.files, file)
	if pp := p.PPipe; pp != nil {
		for _, m := range pp.Models {
			tt.targets[m.Model] = true
		}
	}
	if pd := p.PARD; pd != nil {
		for _, a := range pd.Apps {
			tt.targets[a.Name] = true
		}
	}
	if c := p.Cascade; c != nil {
		tt.targets[c.Task] = true
	}
	if q := p.QLM; q != nil {
		for _, g := range q.Groups {
			tt.targets[g.Model] = true
			if g.Class != "" {
				tt.classes[g.Class] = true
			}
		}
		for _, in := range q.Instances {
			if in.Model != "" {
				tt.targets[in.Model] = true
			}
		}
	}
	if p.DyOrc != nil {
		tt.complete = false
	}
}

// check reports each unknown target or class once, at its first use, with a count.
func (tt *traceTargets) check(v *validator, t *Trace) {
	if !tt.complete || len(tt.files) == 0 {
		return
	}
	where := strings.Join(tt.files, ", ")
	type first struct {
		path string
		n    int
	}
	badT, badC := map[string]*first{}, map[string]*first{}
	var orderT, orderC []string
	note := func(m map[string]*first, order *[]string, key, path string) {
		if f := m[key]; f != nil {
			f.n++
			return
		}
		m[key] = &first{path, 1}
		*order = append(*order, key)
	}
	for i, r := range t.Requests {
		if r.Target != "" && !tt.targets[r.Target] {
			note(badT, &orderT, r.Target, field(idx("requests", i), "target"))
		}
		if r.Class != "" && len(tt.classes) > 0 && !tt.classes[r.Class] {
			note(badC, &orderC, r.Class, field(idx("requests", i), "class"))
		}
	}
	if c := t.Counts; c != nil && c.Target != "" && !tt.targets[c.Target] {
		note(badT, &orderT, c.Target, "counts.target")
	}
	times := func(n int) string {
		if n == 1 {
			return ""
		}
		return fmt.Sprintf(" (%d requests)", n)
	}
	what := "a model or application of " + where
	if tt.kind == "plan" {
		what = fmt.Sprintf("a model or application served by %s (%s)", where, listNames(tt.targets))
	}
	for _, k := range orderT {
		v.add(badT[k].path, k, "unknown target: not %s%s", what, times(badT[k].n))
	}
	for _, k := range orderC {
		v.add(badC[k].path, k, "unknown class: not an LLM class of %s%s", where, times(badC[k].n))
	}
}

// checkTraceTargets checks a trace against the workloads and plans given with it: every
// target and class it names must be one they define (each set checked on its own, so a
// trace given with a plan and its workload is reported once per set that lacks the name).
func checkTraceTargets(v *validator, t *Trace, workloads []namedWorkload, plans []namedPlan) {
	if len(workloads) > 0 {
		tt := newTraceTargets("workload")
		for _, nw := range workloads {
			tt.addWorkload(nw.file, nw.w)
		}
		tt.check(v, t)
	}
	if len(plans) > 0 {
		tt := newTraceTargets("plan")
		for _, np := range plans {
			tt.addPlan(np.file, np.p)
		}
		tt.check(v, t)
	}
}

type namedPlan struct {
	file string
	p    *Plan
}
