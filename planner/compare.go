package planner

import (
	"fmt"
	"sort"
)

// CompareByName is a golden comparison item by item (Checker.Compare): each of ref's items,
// in name order, against got's item of the same name. An item got lacks is a "missing"
// check naming it as what ("model", "app"); each pair gives the checks compare makes.
func CompareByName[T any](what string, got, ref []T, name func(*T) string, compare func(g, r *T) []Check) []Check {
	by := map[string]T{}
	for _, g := range got {
		by[name(&g)] = g
	}
	refs := append([]T(nil), ref...)
	sort.Slice(refs, func(i, j int) bool { return name(&refs[i]) < name(&refs[j]) })
	var out []Check
	for i := range refs {
		r := &refs[i]
		g, ok := by[name(r)]
		if !ok {
			out = append(out, Check{Line: fmt.Sprintf("%s %s: missing from the plan", what, name(r)), Name: "missing", Subject: name(r)})
			continue
		}
		out = append(out, compare(&g, r)...)
	}
	return out
}
