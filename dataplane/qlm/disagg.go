package qlm

import (
	"fmt"

	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
)

// Disaggregated instances (qlmsec.QLMInstance.Role, llm-deploy-search §1). The policies run
// a plan's role instances themselves (disaggpol.go), by the rules of dataplane/llm's
// ReplayDisagg; DisaggOf resolves the same plan into ReplayDisagg's input, one per model,
// for callers that replay request lists without the simulator (the deployment search).

// DisaggModel is one model's disaggregated deployment in a plan.
type DisaggModel struct {
	Model string
	// Prefill and Decode are the instances' profiles (one kind per role).
	Prefill, Decode *formats.LLMProfile
	Deploy          llm.Disagg
}

// HasRoles reports whether some instance of the plan's qlm section has a role.
func HasRoles(p *formats.Plan) bool {
	if qlmsec.PlanOf(p) == nil {
		return false
	}
	for _, in := range qlmsec.PlanOf(p).Instances {
		if in.Role != "" {
			return true
		}
	}
	return false
}

// DisaggOf resolves, per model with prefill and decode instances (in order of first
// instance), its deployment: the profiles of the instances' (GPU, gpu_count) from the
// plan's embedded profiles, the counts, and the link from the plan's cluster (kv_link_gbps).
// The instances of one role of one model must be of one kind (one profile per side).
func DisaggOf(p *formats.Plan) ([]DisaggModel, error) {
	if qlmsec.PlanOf(p) == nil {
		return nil, formats.ErrorList{{Path: "qlm", Rule: "the plan has no qlm section"}}
	}
	e := p.Provenance.Embedded
	cl := p.TargetCluster()
	if e == nil || len(e.Profiles) == 0 || cl == nil {
		return nil, formats.ErrorList{{Path: "provenance.embedded", Rule: "a disaggregated plan needs its embedded LLM profiles and cluster"}}
	}
	if cl.KVLinkGBps == nil {
		return nil, formats.ErrorList{{Path: "cluster.kv_link_gbps", Rule: "missing: prefill instances move KV to decode instances over this link (GB/s)"}}
	}
	var out []DisaggModel
	at := map[string]int{}
	for i, in := range qlmsec.PlanOf(p).Instances {
		if in.Role == "" {
			continue
		}
		path := fmt.Sprintf("qlm.instances[%d]", i)
		pr := findProfile(e.Profiles, in)
		if pr == nil {
			return nil, formats.ErrorList{{Path: path + ".gpu", Value: in.GPU, Rule: fmt.Sprintf("no LLM profile of %q on %d × %s in the embedded profiles", in.Model, max(in.GPUCount, 1), in.GPU)}}
		}
		k, ok := at[in.Model]
		if !ok {
			k = len(out)
			at[in.Model] = k
			out = append(out, DisaggModel{Model: in.Model, Deploy: llm.Disagg{LinkGBps: *cl.KVLinkGBps}})
		}
		d := &out[k]
		side, n := &d.Prefill, &d.Deploy.P
		if in.Role == llmspec.RoleDecode {
			side, n = &d.Decode, &d.Deploy.D
		}
		if *side != nil && *side != pr {
			return nil, formats.ErrorList{{Path: path + ".gpu", Value: in.GPU, Rule: fmt.Sprintf("the %s instances of %q must be of one kind (GPU and gpu_count)", in.Role, in.Model)}}
		}
		*side = pr
		*n++
	}
	for i := range out {
		d := &out[i]
		if d.Prefill == nil || d.Decode == nil {
			return nil, formats.ErrorList{{Path: "qlm.instances", Value: d.Model, Rule: "a model with a role needs prefill and decode instances"}}
		}
		d.Deploy.Prefill, d.Deploy.Decode = llm.NewModel(d.Prefill), llm.NewModel(d.Decode)
	}
	return out, nil
}

// findProfile is the embedded LLM profile instance in runs.
func findProfile(profiles []formats.Profile, in qlmsec.QLMInstance) *formats.LLMProfile {
	x := Instance{GPU: in.GPU, GPUCount: in.GPUCount}
	for i := range profiles {
		p := &profiles[i]
		for j := range p.LLMs {
			if pr := &p.LLMs[j]; pr.Model == in.Model && x.runs(pr) {
				return pr
			}
		}
	}
	return nil
}
