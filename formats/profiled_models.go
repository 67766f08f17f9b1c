package formats

// ProfiledModels is what a section's cross-check needs of the profiles given beside it: their
// file names (in SortedKeys order, for the message) and the names of the models they hold —
// DNN models (models[].name) when dnn is set, LLMs (llms[].model) when llm is set. No file
// means no profile was given, and the cross-check has nothing to check against.
func ProfiledModels(docs map[string]Document, dnn, llm bool) (files []string, known map[string]bool) {
	known = map[string]bool{}
	for _, f := range SortedKeys(docs) {
		p, ok := docs[f].(*Profile)
		if !ok || p == nil {
			continue
		}
		files = append(files, f)
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

// WorkloadNames is what a plan section's cross-check needs of the workloads given beside the
// plan: their file names (in SortedKeys order, for the message) and every name names lists
// in any of them (a PARD plan's apps must be pipelines of these workloads). No file means no
// workload was given, and the cross-check has nothing to check against.
func WorkloadNames(docs map[string]Document, names func(*Workload) []string) (files []string, known map[string]bool) {
	known = map[string]bool{}
	for _, f := range SortedKeys(docs) {
		w, ok := docs[f].(*Workload)
		if !ok || w == nil {
			continue
		}
		files = append(files, f)
		for _, n := range names(w) {
			known[n] = true
		}
	}
	return files, known
}
