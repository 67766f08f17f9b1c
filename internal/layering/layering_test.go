// Package layering tests DESIGN.md's dependency rule with the go tool itself: cmd → bench →
// {planner, sim, serve} → data plane → formats; planner and sim never import each other;
// nothing below cmd imports a bench or the system registry.
package layering

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/plan-dev/plan/"

func deps(t *testing.T, patterns string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-deps"}, strings.Fields(patterns)...)...).Output()
	if err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	var ds []string
	for _, l := range strings.Fields(string(out)) {
		if strings.HasPrefix(l, module) {
			ds = append(ds, strings.TrimPrefix(l, module))
		}
	}
	return ds
}

func TestLayering(t *testing.T) {
	for _, tc := range []struct {
		pkgs      string
		forbidden []string
	}{
		{"../../planner/...", []string{"sim", "serve", "bench", "cmd", "internal/systems"}},
		{"../../sim/...", []string{"planner", "serve", "bench", "cmd", "internal/systems"}},
		{"../../dataplane/...", []string{"planner", "sim", "serve", "bench", "cmd", "internal/systems"}},
		// The engine core solves nothing; a system's policy may re-plan online with the
		// solver (QLM's plan generator, QLM §7), deterministically and within its budget.
		{"../../dataplane", []string{"solver"}},
		// serve/internal holds development mains (profiling), which may wire the registry.
		{"../../serve ../../serve/load", []string{"planner", "bench", "cmd", "internal/systems"}},
		{"../../formats/...", []string{"dataplane", "planner", "sim", "serve", "bench", "cmd", "solver"}},
	} {
		for _, d := range deps(t, tc.pkgs) {
			for _, f := range tc.forbidden {
				if d == f || strings.HasPrefix(d, f+"/") {
					t.Errorf("%s depends on %s (forbidden: %s)", tc.pkgs, d, f)
				}
			}
		}
	}
}
