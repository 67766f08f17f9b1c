package formats

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// PlanStatuses are the statuses a plan's provenance may record: the solver's outcomes plus
// "heuristic" for plans made without a solver (baselines such as np or dart-r).
var PlanStatuses = []string{"optimal", "time-limit", "heuristic", "infeasible", "unbounded", "error"}

var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// TargetCluster returns the cluster the plan was solved for: Cluster, else the embedded
// input cluster, else nil.
func (p *Plan) TargetCluster() *Cluster {
	if p.Cluster != nil {
		return p.Cluster
	}
	if e := p.Provenance.Embedded; e != nil {
		return e.Cluster
	}
	return nil
}

// Validate checks a plan: every section on its own, GPU types against the plan's cluster
// (when it has one), and models against its embedded profiles (when it has them). A typed
// section (all five in-tree systems') is checked by the Section secs registers under its
// key; secs nil is itself a problem (ErrNoSections): the systems' rules would not run.
func (p *Plan) Validate(secs *SectionSet) ErrorList {
	if secs == nil {
		return noSectionsProblem(KindPlan)
	}
	v := &validator{}
	checkMeta(v, p.TypeMeta, KindPlan)
	p.Provenance.validate(v, "provenance", secs)
	if p.Cluster != nil {
		v.nested("cluster", p.Cluster.Validate())
	}
	if p.Fleet != nil {
		p.Fleet.validate(v, "fleet")
	}
	if p.Prediction != nil {
		p.Prediction.validate(v, "prediction")
	}
	v.errs = append(v.errs, p.Sections.validate(p)...)
	if len(p.SectionKeys()) == 0 {
		switch p.Provenance.Status {
		case "optimal", "time-limit", "heuristic":
			v.add("", nil, "must have at least one of %s (status is %s)", prose(sectionKeys(KindPlan, secs)), p.Provenance.Status)
		}
	}
	if e := p.Provenance.Embedded; e != nil && len(e.Profiles) > 0 {
		// Check the sections against the embedded profiles, once those are valid themselves.
		ix := newModelIndex()
		valid := true
		for i := range e.Profiles {
			valid = valid && len(e.Profiles[i].Validate()) == 0
			ix.add(fmt.Sprintf("provenance.embedded.profiles[%d]", i), &e.Profiles[i])
		}
		if valid {
			p.checkProfiles(v, ix, "provenance.embedded.profiles", secs)
		}
	}
	return v.errs
}

func (pv *Provenance) validate(v *validator, p string, secs *SectionSet) {
	notEmpty(v, field(p, "tool"), pv.Tool)
	notEmpty(v, field(p, "tool_version"), pv.ToolVersion)
	if pv.RateMargin != 0 && !(pv.RateMargin > 1 && pv.RateMargin <= 100) {
		v.add(field(p, "rate_margin"), pv.RateMargin, "must be in (1, 100] (absent: planned at the workload's rates)")
	}
	if !digestRE.MatchString(pv.InputDigest) {
		v.add(field(p, "input_digest"), pv.InputDigest, "must be sha256:<64 hex digits>")
	}
	for i, in := range pv.Inputs {
		ip := idx(field(p, "inputs"), i)
		oneOf(v, field(ip, "kind"), in.Kind, Kinds)
		notEmpty(v, field(ip, "path"), in.Path)
		if !digestRE.MatchString(in.Digest) {
			v.add(field(ip, "digest"), in.Digest, "must be sha256:<64 hex digits>")
		}
	}
	if len(pv.Options) > 0 {
		var opts map[string]json.RawMessage
		if err := json.Unmarshal(pv.Options, &opts); err != nil {
			v.add(field(p, "options"), string(pv.Options), "must be an object")
		}
		for _, k := range sortedKeys(opts) {
			if k == "" {
				v.add(keyPath(field(p, "options"), k), k, "option name must not be empty")
			}
		}
	}
	oneOf(v, field(p, "status"), pv.Status, PlanStatuses)
	finiteNum(v, field(p, "objective"), pv.Objective)
	if pv.Bound != nil {
		finiteNum(v, field(p, "bound"), *pv.Bound)
	} else if pv.Status == "optimal" {
		// Optimal is a claim with a proof, whoever made the plan: a search or a baseline
		// with no bound is "heuristic".
		v.add(field(p, "bound"), nil, "must be present: an optimal solve proves its bound (a plan with no proof is heuristic)")
	}
	if pv.Gap != nil {
		nonNegative(v, field(p, "gap"), *pv.Gap)
		if pv.Bound == nil {
			v.add(field(p, "gap"), *pv.Gap, "must be absent when no bound is recorded")
		}
	}
	nonNegative(v, field(p, "solve_ms"), pv.SolveMs)
	atLeast(v, field(p, "nodes"), pv.Nodes, 0)
	if e := pv.Embedded; e != nil {
		ep := field(p, "embedded")
		for i := range e.Profiles {
			v.nested(idx(field(ep, "profiles"), i), e.Profiles[i].Validate())
		}
		if e.Cluster != nil {
			v.nested(field(ep, "cluster"), e.Cluster.Validate())
		}
		if e.Workload != nil {
			v.nested(field(ep, "workload"), e.Workload.Validate(secs))
		}
	}
}

func finiteNum(v *validator, path string, x float64) {
	if !finite(x) {
		v.add(path, x, "must be a finite number")
	}
}

// gpuChecker checks GPU type references against a plan's cluster, when it has one.
type gpuChecker struct {
	cluster *Cluster
	where   string // "cluster" or "provenance.embedded.cluster"
}

func (p *Plan) gpuChecker() gpuChecker {
	if p.Cluster != nil {
		return gpuChecker{p.Cluster, "cluster"}
	}
	if c := p.TargetCluster(); c != nil {
		return gpuChecker{c, "provenance.embedded.cluster"}
	}
	return gpuChecker{}
}

// check requires a non-empty GPU type that the cluster (if any) has.
func (g gpuChecker) check(v *validator, path, gpu string) *GPUPool {
	if !notEmpty(v, path, gpu) || g.cluster == nil {
		return nil
	}
	pool, ok := g.cluster.Pool(gpu)
	if !ok {
		v.add(path, gpu, "unknown GPU type: not in %s.gpus (%s)", g.where, g.types())
		return nil
	}
	return pool
}

func (g gpuChecker) types() string {
	t := make([]string, len(g.cluster.GPUs))
	for i, p := range g.cluster.GPUs {
		t[i] = p.Type
	}
	return strings.Join(t, ", ")
}

func finiteParams(v *validator, p string, params map[string]float64) {
	for _, k := range sortedKeys(params) {
		kp := keyPath(p, k)
		if k == "" {
			v.add(kp, k, "parameter name must not be empty")
		}
		finiteNum(v, kp, params[k])
	}
}
