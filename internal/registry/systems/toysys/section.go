// Package toysys is a toy sixth system, for tests only: it proves that a system is new
// packages plus one registry line (DESIGN.md "Systems as plug-ins"). It
// registers a workload section (toy_jobs), a plan section (toy), a planner, a deployer and a
// FIFO policy, a checker and an exporter, all through the generic interfaces — formats,
// the registry and the commands know nothing of it. Its model is M/D/c-like on purpose:
// one application of fixed-latency jobs served first come, first served by c workers.
package toysys

import (
	"fmt"

	"github.com/plan-dev/plan/formats"
)

// Keys of its sections and its name.
const (
	Name            = "toy"
	WorkloadSection = "toy_jobs"
	PlanSection     = "toy"
)

// Jobs is the workload section: one application of identical jobs.
type Jobs struct {
	Name    string           `json:"name"`
	SLO     formats.Duration `json:"slo"`
	RateRPS float64          `json:"rate_rps"`
	// LatencyUs is one job's service time on any GPU.
	LatencyUs float64 `json:"latency_us"`
}

// Plan is the plan section: the workers that serve the jobs.
type Plan struct {
	App       string           `json:"app"`
	SLO       formats.Duration `json:"slo"`
	GPU       string           `json:"gpu"`
	Workers   int              `json:"workers"`
	LatencyUs float64          `json:"latency_us"`
	RateRPS   float64          `json:"rate_rps"`
}

// jobsSection is the toy_jobs workload section: its type says the fields (all required),
// checkJobs the rules a type cannot say; it says its rate (formats.RateTargeter).
var jobsSection = jobsSec{formats.SectionOf[Jobs]{Name: WorkloadSection, Sys: Name, Check: checkJobs}}

// planSection is the toy plan section, checked against a given cluster's GPU types; it
// counts its GPUs (formats.GPUCounter).
var planSection = planSec{formats.SectionOf[Plan]{Name: PlanSection, Sys: Name, Check: checkPlan, Cross: crossCheckPlan}}

// jobsSec and planSec add to the SectionOfs the extension points shared code asks through,
// as the in-tree systems' sections do.
type (
	jobsSec struct{ formats.SectionOf[Jobs] }
	planSec struct{ formats.SectionOf[Plan] }
)

// Targets: the one application and its rate (formats.RateTargeter).
func (s jobsSec) Targets(w *formats.Workload) []formats.RateTarget {
	if j := s.OfWorkload(w); j != nil {
		return []formats.RateTarget{{Name: j.Name, RateRPS: j.RateRPS}}
	}
	return nil
}

// WithRates sets in w a copy of the jobs at the rate rate(name, rate) (formats.RateTargeter).
func (s jobsSec) WithRates(w *formats.Workload, rate func(string, float64) float64) {
	if j := s.OfWorkload(w); j != nil {
		c := *j
		c.RateRPS = rate(c.Name, c.RateRPS)
		formats.SetWorkload(w, s, &c)
	}
}

// GPUsUsed: one GPU of the plan's type per worker (formats.GPUCounter).
func (s planSec) GPUsUsed(p *formats.Plan) map[string]int {
	if tp := s.OfPlan(p); tp != nil {
		return map[string]int{tp.GPU: tp.Workers}
	}
	return nil
}

func checkJobs(j *Jobs) formats.ErrorList {
	var errs formats.ErrorList
	if j.Name == "" {
		errs = append(errs, &formats.FieldError{Path: WorkloadSection + ".name", Rule: "must not be empty"})
	}
	if j.SLO <= 0 {
		errs = append(errs, &formats.FieldError{Path: WorkloadSection + ".slo", Value: j.SLO.String(), Rule: "must be > 0"})
	}
	if !(j.RateRPS > 0) {
		errs = append(errs, &formats.FieldError{Path: WorkloadSection + ".rate_rps", Value: fmt.Sprint(j.RateRPS), Rule: "must be > 0"})
	}
	if !(j.LatencyUs > 0) {
		errs = append(errs, &formats.FieldError{Path: WorkloadSection + ".latency_us", Value: fmt.Sprint(j.LatencyUs), Rule: "must be > 0"})
	}
	return errs
}

func checkPlan(p *Plan) formats.ErrorList {
	var errs formats.ErrorList
	if p.Workers < 1 {
		errs = append(errs, &formats.FieldError{Path: PlanSection + ".workers", Value: fmt.Sprint(p.Workers), Rule: "must be >= 1"})
	}
	if !(p.LatencyUs > 0) {
		errs = append(errs, &formats.FieldError{Path: PlanSection + ".latency_us", Value: fmt.Sprint(p.LatencyUs), Rule: "must be > 0"})
	}
	if p.GPU == "" {
		errs = append(errs, &formats.FieldError{Path: PlanSection + ".gpu", Rule: "must not be empty"})
	}
	return errs
}

// crossCheckPlan: the plan's GPU type must be one of a given cluster's.
func crossCheckPlan(p *Plan, _ string, docs map[string]formats.Document) formats.ErrorList {
	for _, d := range docs {
		c, ok := d.(*formats.Cluster)
		if !ok {
			continue
		}
		for _, g := range c.GPUs {
			if g.Type == p.GPU {
				return nil
			}
		}
		return formats.ErrorList{{Path: PlanSection + ".gpu", Value: fmt.Sprintf("%q", p.GPU), Rule: "no given cluster has this GPU type"}}
	}
	return nil
}

// planOf returns the toy section of a plan (nil = none).
func planOf(p *formats.Plan) *Plan { return planSection.In(p.Sections) }

// jobsOf returns the toy section of a workload (nil = none).
func jobsOf(w *formats.Workload) *Jobs {
	if w == nil {
		return nil
	}
	return jobsSection.In(w.Sections)
}
