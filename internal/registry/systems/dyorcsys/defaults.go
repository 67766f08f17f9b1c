package dyorcsys

import "github.com/plan-dev/plan/planner/dyorc"

// defaultNotes name the defaults a DyOrc placement took that decide its result: without
// --min-gpus the services are spread over every GPU of the cluster (the placement minimizes
// the busiest GPU's load, DyOrc §4), not packed on the fewest that serve the rates.
func defaultNotes(f dyorc.Flags) []string {
	if f.MinGPUs {
		return nil
	}
	return []string{"--min-gpus unset (default): the services spread over every GPU of the cluster, not packed on the fewest that serve the apps' rates"}
}
