package roofline

import (
	"slices"
	"sort"
	"testing"

	"github.com/plan-dev/plan/profiler/gpus"
)

// TestGPUTablesFollowTheCatalogue: the roofline's per-GPU tables name only catalogue types;
// the fitted kernel constants are exactly the measured types' (those with kernel tables);
// every type's nearest measured GPU has a fit to lend and every measured type's stand-in
// one too.
func TestGPUTablesFollowTheCatalogue(t *testing.T) {
	var measured []string
	for _, s := range gpus.All() {
		if s.Measured() {
			measured = append(measured, s.Name)
		}
		if _, ok := fittedKernels[s.NearestMeasured]; !ok {
			t.Errorf("%s: nearest measured %s has no fitted constants", s.Name, s.NearestMeasured)
		}
		if s.Measured() {
			if _, ok := fittedKernels[NearestMeasured(s, s.Name)]; !ok {
				t.Errorf("%s: stand-in %q has no fitted constants", s.Name, NearestMeasured(s, s.Name))
			}
		}
	}
	var fitted []string
	for g := range fittedKernels {
		fitted = append(fitted, g)
	}
	sort.Strings(fitted)
	sort.Strings(measured)
	if !slices.Equal(fitted, measured) {
		t.Errorf("fitted kernel constants for %v; the catalogue's measured types are %v", fitted, measured)
	}
	for name, keys := range map[string][]string{"calibrated": keysOf(calibrated), "kernelParams": keysOf(kernelParams)} {
		for _, g := range keys {
			if _, err := gpus.Lookup(g); err != nil {
				t.Errorf("%s[%s]: %v", name, g, err)
			}
		}
	}
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
