package formats

import (
	"sort"
	"strings"
)

// CheckSet runs the checks that span files: docs maps a file name to its decoded document.
// It reports, against the file that holds the problem:
//   - a workload naming a model (models, pipeline modules, cascades, LLM classes, workflow
//     services without inline latency) that no given profile has;
//   - a profiled model that is used (by a given workload, or any model when no workload is
//     given) with no latency for a GPU type of a given cluster; an LLM with no profile on any
//     of the cluster's GPU types;
//   - a plan naming GPU types that no given cluster has, models that no given profile has,
//     partitions that do not end at the model's last block or have no latency entry, and
//     applications, cascades, LLM classes and services a given workload does not define;
//   - a trace whose targets or classes no given workload defines, or that no given plan
//     serves (its models, applications, cascade task, LLM groups and classes).
//
// Each check runs only when the files it needs are present, so any subset may be given.
// Documents need not be valid on their own; CheckSet never panics on invalid ones. The
// cross-file checks of the systems' sections (Section.CrossCheck) run with secs, the
// registered sections: each after formats' own checks of its file. A plan or workload
// among docs with secs nil is a problem (ErrNoSections): its systems' checks would not run.
func CheckSet(docs map[string]Document, secs *SectionSet) ErrorList {
	files := make([]string, 0, len(docs))
	for f := range docs {
		files = append(files, f)
	}
	sort.Strings(files)
	var (
		profiles  = newModelIndex()
		clusters  []namedCluster
		workloads []namedWorkload
		plans     []namedPlan
	)
	for _, f := range files {
		switch d := docs[f].(type) {
		case *Profile:
			if d != nil {
				profiles.add(f, d)
			}
		case *Cluster:
			if d != nil {
				clusters = append(clusters, namedCluster{f, d})
			}
		case *Workload:
			if d != nil {
				workloads = append(workloads, namedWorkload{f, d})
			}
		case *Plan:
			if d != nil {
				plans = append(plans, namedPlan{f, d})
			}
		}
	}
	if secs == nil && len(workloads)+len(plans) > 0 {
		return noSectionsProblem("plan or workload")
	}
	var all ErrorList
	for _, f := range files {
		v := &validator{}
		switch d := docs[f].(type) {
		case *Profile:
			if d != nil && len(clusters) > 0 {
				dnn, llm := usedModels(workloads, secs)
				checkProfileCoverage(v, d, profiles, clusters, dnn, llm)
			}
		case *Plan:
			if d != nil {
				checkPlanSet(v, d, profiles, clusters, secs)
			}
		case *Trace:
			if d != nil {
				checkTraceTargets(v, d, workloads, plans, secs)
			}
		}
		all = append(all, v.errs.WithFile(f)...)
		switch d := docs[f].(type) {
		case *Workload:
			if d != nil {
				all = append(all, d.Sections.crossCheck(f, docs)...)
			}
		case *Plan:
			if d != nil {
				all = append(all, d.Sections.crossCheck(f, docs)...)
			}
		}
	}
	return all
}

type namedCluster struct {
	file string
	c    *Cluster
}

type namedWorkload struct {
	file string
	w    *Workload
}

// modelIndex finds profiled models across several profiles.
type modelIndex struct {
	files []string
	dnn   map[string][]dnnRef
	llm   map[string][]*LLMProfile
}

type dnnRef struct {
	file string
	m    *ModelProfile
}

func newModelIndex() *modelIndex {
	return &modelIndex{dnn: map[string][]dnnRef{}, llm: map[string][]*LLMProfile{}}
}

func (ix *modelIndex) add(file string, p *Profile) {
	ix.files = append(ix.files, file)
	for i := range p.Models {
		m := &p.Models[i]
		ix.dnn[m.Name] = append(ix.dnn[m.Name], dnnRef{file, m})
	}
	for i := range p.LLMs {
		l := &p.LLMs[i]
		ix.llm[l.Model] = append(ix.llm[l.Model], l)
	}
}

func (ix *modelIndex) where() string { return strings.Join(ix.files, ", ") }

// hasGPU reports whether any profile of the model has a latency entry for the GPU type.
func (ix *modelIndex) hasGPU(model, gpu string) bool {
	for _, r := range ix.dnn[model] {
		for _, e := range r.m.Latency {
			if e.GPU == gpu {
				return true
			}
		}
	}
	return false
}

// lookup finds a latency entry for (gpu, vgpu, batch) in any profile of the model.
func (ix *modelIndex) lookup(model, gpu string, vgpu, batch int) bool {
	for _, r := range ix.dnn[model] {
		if _, ok := r.m.Lookup(gpu, vgpu, batch); ok {
			return true
		}
	}
	return false
}

// ModelUser is a Section that names the profiled models its
// section of doc uses, so that a profile's coverage is checked for them.
type ModelUser interface {
	UsedModels(doc Document) (dnn, llm []string)
}

// usedModels returns the DNN and LLM model names the workloads use; nil maps mean "all".
func usedModels(workloads []namedWorkload, secs *SectionSet) (dnn, llm map[string]bool) {
	if len(workloads) == 0 {
		return nil, nil
	}
	dnn, llm = map[string]bool{}, map[string]bool{}
	for _, nw := range workloads {
		w := nw.w
		for _, k := range w.SectionKeys() {
			if u, ok := w.Sections[k].Section.(ModelUser); ok {
				d, l := u.UsedModels(w)
				for _, m := range d {
					dnn[m] = true
				}
				for _, m := range l {
					llm[m] = true
				}
			}
		}
	}
	return dnn, llm
}

func checkProfileCoverage(v *validator, p *Profile, ix *modelIndex, clusters []namedCluster, usedDNN, usedLLM map[string]bool) {
	for i := range p.Models {
		m := &p.Models[i]
		if usedDNN != nil && !usedDNN[m.Name] {
			continue
		}
		for _, nc := range clusters {
			for _, pool := range nc.c.GPUs {
				if pool.Count > 0 && pool.Type != "" && !ix.hasGPU(m.Name, pool.Type) {
					v.add(field(idx("models", i), "latency"), pool.Type, "no latency for GPU type %s of %s (model %s is used)", pool.Type, nc.file, m.Name)
				}
			}
		}
	}
	// An LLM needs a profile on at least one GPU type of some cluster; report it once, on the
	// first profile file that has the model.
	reported := map[string]bool{}
	for i := range p.LLMs {
		l := &p.LLMs[i]
		if reported[l.Model] || (usedLLM != nil && !usedLLM[l.Model]) || ix.llm[l.Model][0] != l {
			continue
		}
		reported[l.Model] = true
		found := false
		var types []string
		for _, nc := range clusters {
			for _, pool := range nc.c.GPUs {
				types = append(types, pool.Type)
				for _, o := range ix.llm[l.Model] {
					if o.GPU == pool.Type && pool.Count > 0 {
						found = true
					}
				}
			}
		}
		if !found {
			v.add(field(idx("llms", i), "gpu"), l.GPU, "LLM %s has no profile on any GPU type of the cluster (%s)", l.Model, strings.Join(types, ", "))
		}
	}
}

// ProfileIndex finds profiled models across the profiles a plan is checked against: those
// it embeds (Plan.Validate) or those given beside it (CheckSet).
type ProfileIndex struct{ ix *modelIndex }

// DNN reports whether a profile has the DNN model.
func (x ProfileIndex) DNN(model string) bool { return len(x.ix.dnn[model]) > 0 }

// LLM reports whether a profile has the LLM.
func (x ProfileIndex) LLM(model string) bool { return len(x.ix.llm[model]) > 0 }

// Blocks is the number of blocks of the DNN model in the first profile that has it (0: none).
func (x ProfileIndex) Blocks(model string) int {
	if refs := x.ix.dnn[model]; len(refs) > 0 {
		return len(refs[0].m.Blocks)
	}
	return 0
}

// Lookup reports whether a profile has a latency entry for the model on (gpu, vgpu, batch).
func (x ProfileIndex) Lookup(model, gpu string, vgpu, batch int) bool {
	return x.ix.lookup(model, gpu, vgpu, batch)
}

// ProfileChecker is a plan Section whose section names profiled
// models: formats runs it against the profiles the plan embeds or is given with, which where
// names in its messages ("provenance.embedded.profiles", "any profile (profile.json)").
type ProfileChecker interface {
	CheckProfiles(p *Plan, ix ProfileIndex, where string) ErrorList
}

// checkProfiles checks a plan's sections against profiles, each by its registered Section
// (in field order: PPipe's partitions end at the model's last block and have latency entries,
// every system's models exist).
func (p *Plan) checkProfiles(v *validator, ix *modelIndex, where string, secs *SectionSet) {
	for _, k := range p.SectionKeys() {
		if pc, ok := p.Sections[k].Section.(ProfileChecker); ok {
			v.errs = append(v.errs, pc.CheckProfiles(p, ProfileIndex{ix}, where)...)
		}
	}
}

func checkPlanSet(v *validator, p *Plan, ix *modelIndex, clusters []namedCluster, secs *SectionSet) {
	checkFleetCurrency(v, p, clusters)
	if len(clusters) > 0 {
		known := map[string]bool{}
		var files []string
		for _, nc := range clusters {
			files = append(files, nc.file)
			for _, pool := range nc.c.GPUs {
				known[pool.Type] = true
			}
		}
		for _, ref := range p.gpuRefs(secs) {
			if ref.GPU != "" && !known[ref.GPU] {
				v.add(ref.Path, ref.GPU, "unknown GPU type: not in %s (%s)", strings.Join(files, ", "), listNames(known))
			}
		}
	}
	// A plan that embeds the profiles it was solved from is checked against those by its
	// own Validate; profiles given beside it may belong to other plans in the same set.
	if len(ix.files) > 0 && (p.Provenance.Embedded == nil || len(p.Provenance.Embedded.Profiles) == 0) {
		p.checkProfiles(v, ix, "any profile ("+ix.where()+")", secs)
	}
}

// GPURef is a GPU type a plan section names, with its path.
type GPURef struct{ Path, GPU string }

// ListGPURefs is the GPURefs of a list at path whose items each name one GPU type: item i's
// is at path[i].gpu.
func ListGPURefs[E any](path string, items []E, gpu func(*E) string) []GPURef {
	var out []GPURef
	for i := range items {
		out = append(out, GPURef{Path: Field(Index(path, i), "gpu"), GPU: gpu(&items[i])})
	}
	return out
}

// GPUUser is a plan Section whose section names GPU types:
// formats checks them against the clusters given with the plan (CheckSet).
type GPUUser interface {
	GPURefs(p *Plan) []GPURef
}

// gpuRefs lists every GPU type the plan's sections name, section by section in field order.
func (p *Plan) gpuRefs(secs *SectionSet) []GPURef {
	var out []GPURef
	for _, k := range p.SectionKeys() {
		if u, ok := p.Sections[k].Section.(GPUUser); ok {
			out = append(out, u.GPURefs(p)...)
		}
	}
	return out
}

// GPUTypes returns the distinct GPU types the plan's sections use (as the Sections of secs
// list them), in first-seen order.
func (p *Plan) GPUTypes(secs *SectionSet) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range p.gpuRefs(secs) {
		if r.GPU != "" && !seen[r.GPU] {
			seen[r.GPU] = true
			out = append(out, r.GPU)
		}
	}
	return out
}
