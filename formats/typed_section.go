package formats

import "errors"

// TypedSection is embedded by the Sections of Plan's and Workload's typed fields (the in-tree
// systems' sections): formats decodes such a field itself and its Go type gives the schema,
// so Decode and Schema are never asked for (SectionSet). One definition serves every system.
type TypedSection struct{}

var errTypedSection = errors.New("a typed field of formats.Plan or formats.Workload: formats decodes it itself")

// Decode is never called for a typed field.
func (TypedSection) Decode([]byte) (any, error) { return nil, errTypedSection }

// Schema: the typed field's Go type gives it.
func (TypedSection) Schema() map[string]any { return nil }

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
