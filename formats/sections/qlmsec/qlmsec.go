// Package qlmsec is QLM's part of the file formats: its plan section (`qlm`: request groups
// and the virtual queues of the LLM serving instances, QLM §4), its validation and its checks
// against the other files given with it. The section is registered whole
// (formats.SectionOf): its types are this package's, read with PlanOf. The LLM classes its
// groups serve, and the workload's `llm_classes` section that states them, are the shared
// LLM vocabulary's (formats/llmspec), which the QLM system registers beside this section.
package qlmsec

import (
	"slices"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
)

// PlanKey is QLM's plan section.
const PlanKey = "qlm"

// Position is the place of QLM's plan section in a plan: fourth, after PPipe's, PARD's and
// CascadeServe's, before DyOrc's, where they stood when formats typed them, so files keep their
// bytes (formats.Positioned).
const Position = 4

// PlanSection is the Section of a plan's `qlm` section: a *QLMPlan.
var PlanSection = planSection{formats.SectionOf[QLMPlan]{Name: PlanKey, Sys: "qlm", CheckIn: formats.InPlan(PlanKey, validatePlan), Cross: crossCheckPlan, Position: Position}}

// planSection adds to the plan's SectionOf what formats asks of a plan section beyond it
// (formats.ProfileChecker, formats.GPUUser, formats.TraceTargeter).
type planSection struct{ formats.SectionOf[QLMPlan] }

// PlanOf is p's `qlm` section, nil when p (or it) is absent.
func PlanOf(p *formats.Plan) *QLMPlan { return PlanSection.OfPlan(p) }

// SetPlan sets p's `qlm` section (nil removes it) and returns p.
func SetPlan(p *formats.Plan, q *QLMPlan) *formats.Plan {
	return formats.SetPlan(p, PlanSection, q)
}

// crossCheckPlan checks that the plan's groups serve LLM classes of the workloads given with
// it (when they define any).
func crossCheckPlan(q *QLMPlan, self string, docs map[string]formats.Document) formats.ErrorList {
	defined := func(w *formats.Workload) ([]string, bool) {
		names := formats.NamesOf(llmspec.ClassesOf(w), func(c *llmspec.LLMClass) string { return c.Name })
		return names, len(names) > 0
	}
	return formats.CheckWorkloadRefs(docs, defined, q.Groups, func(i int, g *QLMGroup) (string, string) {
		return formats.Field(formats.Index(PlanKey+".groups", i), "class"), g.Class
	}, "not an LLM class of %s")
}

// validatePlan checks QLM's plan section: uniquely named groups of one model with an SLO,
// instances on the plan's GPU types whose virtual queues hold known groups, each once.
func validatePlan(c *formats.Checker, pl *formats.Plan, q *QLMPlan, p string) {
	ip := formats.Field(p, "instances")
	if len(q.Instances) == 0 {
		c.Add(ip, nil, "must list at least one instance")
	}
	groups := &formats.Names{}
	for i := range q.Groups {
		gr := &q.Groups[i]
		gp := formats.Index(formats.Field(p, "groups"), i)
		c.Check(groups, formats.Field(gp, "id"), gr.ID)
		c.NotEmpty(formats.Field(gp, "model"), gr.Model)
		c.PositiveDuration(formats.Field(gp, "slo"), gr.SLO)
		c.AtLeast(formats.Field(gp, "requests"), int64(gr.Requests), 1)
	}
	seen := &formats.Names{}
	queued := map[string]string{}
	for i := range q.Instances {
		in := &q.Instances[i]
		np := formats.Index(ip, i)
		c.Check(seen, formats.Field(np, "name"), in.Name)
		c.GPU(pl, formats.Field(np, "gpu"), in.GPU)
		c.AtLeast(formats.Field(np, "gpu_count"), int64(in.GPUCount), 1)
		if len(in.GPUs) > 0 && len(in.GPUs) != in.GPUCount {
			c.Add(formats.Field(np, "gpus"), in.GPUs, "lists %d GPUs for gpu_count %d", len(in.GPUs), in.GPUCount)
		}
		for j, g := range in.GPUs {
			if g < 0 || slices.Contains(in.GPUs[:j], g) {
				c.Add(formats.Index(formats.Field(np, "gpus"), j), g, "must be a GPU index >= 0, each once")
			}
		}
		for j, id := range in.Queue {
			jp := formats.Index(formats.Field(np, "queue"), j)
			if groups.First(id) == "" {
				c.Add(jp, id, "unknown group: not in %s", formats.Field(p, "groups"))
				continue
			}
			if first, dup := queued[id]; dup {
				c.Add(jp, id, "group is already queued at %s", first)
				continue
			}
			queued[id] = jp
		}
	}
	validateRoles(c, pl, q, p)
	c.DurationIn(formats.Field(p, "replan_ms"), q.ReplanMs, 1e3, "ms", false)
}

// validateRoles checks the instances' roles (llm-deploy-search §1): each "", prefill or
// decode; a model served by prefill instances has decode instances too, and the reverse, and
// no aggregated instance besides (a request of it takes both phases, one on each side); and
// the plan's cluster gives the KV link they move KV over.
func validateRoles(c *formats.Checker, pl *formats.Plan, q *QLMPlan, p string) {
	type count struct{ agg, pre, dec, first int }
	byModel := map[string]*count{}
	var order []string
	roles, bad := false, false
	for i, in := range q.Instances {
		rp := formats.Field(formats.Index(formats.Field(p, "instances"), i), "role")
		if in.Role != "" {
			c.OneOf(rp, in.Role, llmspec.Roles)
			if !slices.Contains(llmspec.Roles, in.Role) {
				bad = true // the pairing below would only repeat it
			}
			roles = true
		}
		n := byModel[in.Model]
		if n == nil {
			n = &count{first: i}
			byModel[in.Model] = n
			order = append(order, in.Model)
		}
		switch in.Role {
		case "":
			n.agg++
		case llmspec.RolePrefill:
			n.pre++
		case llmspec.RoleDecode:
			n.dec++
		}
	}
	if bad {
		return
	}
	for _, m := range order {
		n := byModel[m]
		if n.pre+n.dec == 0 {
			continue
		}
		rp := formats.Field(formats.Index(formats.Field(p, "instances"), n.first), "role")
		switch {
		case n.pre == 0:
			c.Add(rp, q.Instances[n.first].Role, "model %q has %d decode instances and no prefill instance", m, n.dec)
		case n.dec == 0:
			c.Add(rp, q.Instances[n.first].Role, "model %q has %d prefill instances and no decode instance", m, n.pre)
		case n.agg > 0:
			c.Add(rp, q.Instances[n.first].Role, "model %q has prefill and decode instances and %d aggregated ones: give every instance of it a role", m, n.agg)
		}
	}
	if cl := pl.TargetCluster(); roles && cl != nil && cl.KVLinkGBps == nil {
		path := "provenance.embedded.cluster.kv_link_gbps"
		if pl.Cluster != nil {
			path = "cluster.kv_link_gbps"
		}
		c.Add(path, nil, "missing: prefill instances move KV to decode instances over this link (GB/s)")
	}
}

// CheckProfiles checks that the LLM of every group and instance is in the profiles
// (formats.ProfileChecker).
func (planSection) CheckProfiles(p *formats.Plan, ix formats.ProfileIndex, where string) formats.ErrorList {
	return formats.CheckOf(PlanOf(p), func(c *formats.Checker, q *QLMPlan) {
		for i, g := range q.Groups {
			if g.Model != "" && !ix.LLM(g.Model) {
				c.Add(formats.Field(formats.Index(PlanKey+".groups", i), "model"), g.Model, "LLM not found in %s", where)
			}
		}
		for i, in := range q.Instances {
			if in.Model != "" && !ix.LLM(in.Model) {
				c.Add(formats.Field(formats.Index(PlanKey+".instances", i), "model"), in.Model, "LLM not found in %s", where)
			}
		}
	})
}

// UsedModels names the LLMs the plan's instances serve (formats.ModelUser on a plan
// section, Plan.ServedModels): what a replayed trace's classes must find an instance of.
func (planSection) UsedModels(doc formats.Document) (dnn, llm []string) {
	p, _ := doc.(*formats.Plan)
	if q := PlanOf(p); q != nil {
		llm = formats.NamesOf(q.Instances, func(in *QLMInstance) string { return in.Model })
	}
	return nil, llm
}

// GPURefs lists the GPU types the plan's instances run on (formats.GPUUser).
func (planSection) GPURefs(p *formats.Plan) []formats.GPURef {
	if q := PlanOf(p); q != nil {
		return formats.ListGPURefs(PlanKey+".instances", q.Instances, func(x *QLMInstance) string { return x.GPU })
	}
	return nil
}

// TraceTargets: a trace given with the plan may name the LLMs of its groups and instances
// and the groups' classes.
func (planSection) TraceTargets(doc formats.Document) (targets, classes []string, complete bool) {
	p, _ := doc.(*formats.Plan)
	q := PlanOf(p)
	if q == nil {
		return nil, nil, true
	}
	if e := p.Provenance.Embedded; e != nil && len(llmspec.ClassesOf(e.Workload)) > 0 {
		// The classes the plan simulates and serves (its embedded workload): a target is a
		// class or the model of one, so what validates also replays; a
		// model only an instance names has no class to replay a request as.
		return llmspec.WorkloadSection.TraceTargets(e.Workload)
	}
	for _, g := range q.Groups {
		targets = append(targets, g.Model)
		if g.Class != "" {
			classes = append(classes, g.Class)
		}
	}
	for _, in := range q.Instances {
		if in.Model != "" {
			targets = append(targets, in.Model)
		}
	}
	return targets, classes, true
}

// ClassesOf is llmspec.ClassesOf, kept for the callers not yet moved to the shared LLM
// vocabulary (serve/openai's tests, which are being rewritten beside this change); new code
// calls llmspec.ClassesOf.
func ClassesOf(w *formats.Workload) []llmspec.LLMClass { return llmspec.ClassesOf(w) }
