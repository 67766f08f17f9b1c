package planner

import "github.com/plan-dev/plan/formats"

// EmbedProfiles is the canonical profile part of a plan's embedded inputs, the same for every
// planner: the profiles restricted to the models the plan uses, in input order, without their
// layer lists (no planner reads them and they dominate a profile's size). A plan re-solves
// from it and its digest identifies the data it was solved from.
func EmbedProfiles(profiles []formats.Profile, used func(model string) bool) []formats.Profile {
	var out []formats.Profile
	for _, pr := range profiles {
		cp := formats.Profile{TypeMeta: pr.TypeMeta, Metadata: pr.Metadata}
		for _, m := range pr.Models {
			if used(m.Name) {
				m.Layers = nil
				cp.Models = append(cp.Models, m)
			}
		}
		if len(cp.Models) > 0 {
			out = append(out, cp)
		}
	}
	return out
}
