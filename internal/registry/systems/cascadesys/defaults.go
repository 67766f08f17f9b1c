package cascadesys

import (
	"fmt"

	pc "github.com/plan-dev/plan/planner/cascade"
)

// defaultNotes name the defaults a cascade solve took that decide its result, one line each
// with its value: the threshold grid every model's certainty is searched on and, where
// --max-len was left unset, the cascade length searched (the workload's own), both bounding
// the gear plans considered (CascadeServe §4.2).
func defaultNotes(f pc.Flags, opt pc.Options) []string {
	var notes []string
	if f.Levels == pc.DefaultFlags().Levels {
		notes = append(notes, fmt.Sprintf("--levels %d (default): each model's threshold searched on a %d-level certainty grid", f.Levels, f.Levels))
	}
	if f.MaxLen == 0 && opt.Search.MaxLen > 0 {
		notes = append(notes, fmt.Sprintf("--max-len unset: cascades of up to %d models searched (the workload's own)", opt.Search.MaxLen))
	}
	return notes
}
