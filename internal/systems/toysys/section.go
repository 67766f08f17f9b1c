// Package toysys is a toy sixth system, for tests only: it proves that a system is new
// packages plus one registry line (DESIGN.md "Systems as plug-ins"). It
// registers a workload section (toy_jobs), a plan section (toy), a planner, a deployer and a
// FIFO policy, a checker and an exporter, all through the generic interfaces — formats,
// the registry and the commands know nothing of it. Its model is M/D/c-like on purpose:
// one application of fixed-latency jobs served first come, first served by c workers.
package toysys

import (
	"fmt"
	"strings"

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

func decodeStrict(key string, js []byte, v any) error {
	if err := formats.StrictUnmarshal(js, v); err != nil {
		return formats.ErrorList{{Path: key, Rule: strings.TrimPrefix(err.Error(), "json: ")}}
	}
	return nil
}

// jobsSection implements formats.Section for toy_jobs.
type jobsSection struct{}

func (jobsSection) Key() string    { return WorkloadSection }
func (jobsSection) System() string { return Name }

func (jobsSection) Decode(js []byte) (any, error) {
	var j Jobs
	if err := decodeStrict(WorkloadSection, js, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

func (jobsSection) Validate(v any) formats.ErrorList {
	j := v.(*Jobs)
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

func (jobsSection) CrossCheck(any, string, map[string]formats.Document) formats.ErrorList { return nil }

func (jobsSection) Schema() map[string]any {
	return map[string]any{"type": "object", "additionalProperties": false,
		"required": []string{"name", "slo", "rate_rps", "latency_us"},
		"properties": map[string]any{"name": map[string]any{"type": "string"}, "slo": map[string]any{"type": "string"},
			"rate_rps": map[string]any{"type": "number"}, "latency_us": map[string]any{"type": "number"}}}
}

// planSection implements formats.Section for the toy plan section.
type planSection struct{}

func (planSection) Key() string    { return PlanSection }
func (planSection) System() string { return Name }

func (planSection) Decode(js []byte) (any, error) {
	var p Plan
	if err := decodeStrict(PlanSection, js, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

func (planSection) Validate(v any) formats.ErrorList {
	p := v.(*Plan)
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

// CrossCheck: the plan's GPU type must be one of a given cluster's.
func (planSection) CrossCheck(v any, _ string, docs map[string]formats.Document) formats.ErrorList {
	p := v.(*Plan)
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

func (planSection) Schema() map[string]any {
	return map[string]any{"type": "object", "required": []string{"app", "slo", "gpu", "workers", "latency_us", "rate_rps"}}
}

// planOf returns the toy section of a plan (nil = none).
func planOf(p *formats.Plan) *Plan {
	sv, ok := p.Sections[PlanSection]
	if !ok {
		return nil
	}
	tp, _ := sv.Value.(*Plan)
	return tp
}

// jobsOf returns the toy section of a workload (nil = none).
func jobsOf(w *formats.Workload) *Jobs {
	if w == nil {
		return nil
	}
	sv, ok := w.Sections[WorkloadSection]
	if !ok {
		return nil
	}
	j, _ := sv.Value.(*Jobs)
	return j
}
