package formats

import "strings"

// Given is the documents of kind D among the files given together (non-nil ones only), with
// their file names, in SortedKeys order: what a section's cross-check walks of the profiles,
// clusters or workloads given beside it.
func Given[D any](docs map[string]Document) (files []string, ds []*D) {
	for _, f := range SortedKeys(docs) {
		if d, ok := any(docs[f]).(*D); ok && d != nil {
			files = append(files, f)
			ds = append(ds, d)
		}
	}
	return files, ds
}

// ProfiledModels is what a section's cross-check needs of the profiles given beside it: their
// file names (in SortedKeys order, for the message) and the names of the models they hold —
// DNN models (models[].name) when dnn is set, LLMs (llms[].model) when llm is set. No file
// means no profile was given, and the cross-check has nothing to check against.
func ProfiledModels(docs map[string]Document, dnn, llm bool) (files []string, known map[string]bool) {
	known = map[string]bool{}
	files, profiles := Given[Profile](docs)
	for _, p := range profiles {
		if dnn {
			for i := range p.Models {
				known[p.Models[i].Name] = true
			}
		}
		if llm {
			for i := range p.LLMs {
				known[p.LLMs[i].Model] = true
			}
		}
	}
	return files, known
}

// CheckProfiledRefs is a workload section's cross-check against the profiles given beside it
// (none given: nothing to check against). refs calls add with the path and name of each model
// the section names (an empty name is not checked): one that is not a DNN model (dnn) or an
// LLM (llm) of those profiles is a problem, rule with the profiles' file names for its %s
// ("model not found in any profile (%s)").
func CheckProfiledRefs(docs map[string]Document, dnn, llm bool, rule string, refs func(add func(path, name string))) ErrorList {
	files, known := ProfiledModels(docs, dnn, llm)
	if len(files) == 0 {
		return nil
	}
	var c Checker
	where := strings.Join(files, ", ")
	refs(func(path, name string) {
		if name != "" && !known[name] {
			c.Add(path, name, rule, where)
		}
	})
	return c.Errs()
}

// CheckWorkloadRefs is a plan section's cross-check of the names it takes from the workloads
// given beside the plan (a PARD plan's apps are pipelines of them). defined lists the names a
// workload defines, ok false where it has no section of that kind; when no workload given has
// one there is nothing to check against. Each element of refs names one (at returns its path
// and name; an empty name is not checked): a name no workload defines is a problem, rule with
// the workloads' file names for its %s ("not a pipeline of %s").
func CheckWorkloadRefs[E any](docs map[string]Document, defined func(*Workload) (names []string, ok bool), refs []E, at func(i int, e *E) (path, name string), rule string) ErrorList {
	files, ws := Given[Workload](docs)
	known, some := map[string]bool{}, false
	for _, w := range ws {
		names, ok := defined(w)
		some = some || ok
		for _, n := range names {
			known[n] = true
		}
	}
	if !some {
		return nil
	}
	var c Checker
	where := strings.Join(files, ", ")
	for i := range refs {
		if path, name := at(i, &refs[i]); name != "" && !known[name] {
			c.Add(path, name, rule, where)
		}
	}
	return c.Errs()
}
