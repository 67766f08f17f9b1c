package qlm

import (
	"fmt"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
)

// Build makes the deployment of LLM classes served by instances (one worker each, all in the
// single Manual stage "instances"). Each class is an application with its own SLO and rate.
func Build(classes []llmspec.LLMClass, setup Setup) (*dataplane.Deployment, error) {
	if len(classes) == 0 || len(setup.Instances) == 0 {
		return nil, fmt.Errorf("qlm: need at least one class and one instance (have %d, %d)", len(classes), len(setup.Instances))
	}
	dep := &dataplane.Deployment{Kind: Kind}
	st := dataplane.Stage{Name: "instances", App: 0, Pipeline: -1, Batch: 1, LatUs: []dataplane.Time{0, 0}, Manual: true}
	dep.Topo.Servers = []dataplane.Server{{Name: "s0", UpMbps: 1e5, DownMbps: 1e5}}
	for i, in := range setup.Instances {
		dep.Topo.GPUs = append(dep.Topo.GPUs, dataplane.GPU{Type: in.GPU, Count: max(in.GPUCount, 1)})
		dep.Topo.Workers = append(dep.Topo.Workers, dataplane.Worker{Name: in.Name, GPU: i, Type: in.GPU, VGPU: 1, Stage: 0})
		st.Pool = append(st.Pool, dataplane.WorkerID(i))
	}
	dep.Stages = []dataplane.Stage{st}
	for i, c := range classes {
		if c.PrefixTokens < 0 {
			return nil, formats.ErrorList{{Path: fmt.Sprintf("llm_classes[%d].prefix_tokens", i), Value: fmt.Sprint(c.PrefixTokens), Rule: "must be >= 0"}}
		}
		cl := Class{Name: c.Name, Model: c.Model, Interactive: c.Interactive, In: c.InputTokens, Out: c.OutputTokens, PrefixTokens: c.PrefixTokens}
		a := dataplane.App{Name: c.Name, SLO: dataplane.Time(c.SLO.D().Microseconds()), RateRPS: c.RateRPS, Weight: c.RateRPS,
			Entry: []dataplane.StageID{0}, Params: map[string]string{paramClass: encode(cl)}}
		if i == 0 {
			a.Params[paramSetup] = encode(setup)
		}
		dep.Apps = append(dep.Apps, a)
	}
	if err := dep.Validate(); err != nil {
		return nil, err
	}
	return dep, nil
}

// FromPlan builds the deployment of a plan's qlm section from the inputs embedded in its
// provenance (classes from the workload, LLM profiles).
func FromPlan(p *formats.Plan) (*dataplane.Deployment, error) {
	q := qlmsec.PlanOf(p)
	if q == nil {
		return nil, formats.ErrorList{{Path: "qlm", Rule: "the plan has no qlm section"}}
	}
	e := p.Provenance.Embedded
	if e == nil || e.Workload == nil || len(llmspec.ClassesOf(e.Workload)) == 0 || len(e.Profiles) == 0 {
		return nil, formats.ErrorList{{Path: "provenance.embedded", Rule: "a QLM plan needs its embedded workload (llm_classes) and LLM profiles"}}
	}
	setup := Setup{ReplanMs: q.ReplanMs, Routes: q.Routes}
	if cl := p.TargetCluster(); cl != nil && cl.KVLinkGBps != nil {
		setup.KVLinkGBps = *cl.KVLinkGBps
	}
	for _, pr := range e.Profiles {
		setup.Profiles = append(setup.Profiles, pr.LLMs...)
	}
	for _, in := range q.Instances {
		x := Instance{Name: in.Name, GPU: in.GPU, Model: in.Model, Role: in.Role}
		if in.GPUCount > 1 {
			x.GPUCount = in.GPUCount // one instance on all its GPUs (tensor parallelism)
		}
		setup.Instances = append(setup.Instances, x)
	}
	dep, err := Build(llmspec.ClassesOf(e.Workload), setup)
	if err != nil {
		return nil, formats.ErrorList{{Path: "qlm", Rule: err.Error()}}
	}
	return dep, nil
}
