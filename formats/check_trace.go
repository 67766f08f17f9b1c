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

// TraceTargeter is a Section whose section defines what a
// trace may name: targets (models or applications) and LLM classes. complete is false when
// the section serves targets the document does not name (a DyOrc plan serves its workload's
// workflow applications): a trace given with it is then not checked.
type TraceTargeter interface {
	TraceTargets(doc Document) (targets, classes []string, complete bool)
}

// add adds what doc's sections define or serve. A section whose Section is no
// TraceTargeter makes the set incomplete, so
// nothing is reported unknown that a system's Section would have known.
func (tt *traceTargets) add(file, kind string, doc Document, sv SectionValues, keys []string, secs *SectionSet) {
	tt.files = append(tt.files, file)
	for _, k := range keys {
		t, ok := sv[k].Section.(TraceTargeter)
		if !ok {
			tt.complete = false
			continue
		}
		targets, classes, complete := t.TraceTargets(doc)
		for _, x := range targets {
			tt.targets[x] = true
		}
		for _, x := range classes {
			tt.classes[x] = true
		}
		tt.complete = tt.complete && complete
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
func checkTraceTargets(v *validator, t *Trace, workloads []namedWorkload, plans []namedPlan, secs *SectionSet) {
	if len(workloads) > 0 {
		tt := newTraceTargets("workload")
		for _, nw := range workloads {
			tt.add(nw.file, KindWorkload, nw.w, nw.w.Sections, nw.w.SectionKeys(), secs)
		}
		tt.check(v, t)
	}
	if len(plans) > 0 {
		tt := newTraceTargets("plan")
		for _, np := range plans {
			tt.add(np.file, KindPlan, np.p, np.p.Sections, np.p.SectionKeys(), secs)
		}
		tt.check(v, t)
	}
}

type namedPlan struct {
	file string
	p    *Plan
}
