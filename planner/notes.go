package planner

// NoteTable is notes as a planner reports them (Reporter): one NOTE table, a row a note;
// none without notes. The deployment search's notes and the defaults a solve took
// (formats.Provenance.Defaults) are printed through it, on stderr beside the plan.
func NoteTable(notes []string) []Table {
	if len(notes) == 0 {
		return nil
	}
	t := Table{Header: []string{"NOTE"}}
	for _, n := range notes {
		t.Rows = append(t.Rows, []string{n})
	}
	return []Table{t}
}
