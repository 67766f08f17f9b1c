package targets

import (
	"slices"
	"testing"

	"github.com/plan-dev/plan/export"
)

// TestInTree: the in-tree list registers (names unique DNS labels: MustRegistry would panic)
// the classic targets first, in the order `plan export --to` lists them, then the others.
func TestInTree(t *testing.T) {
	want := []string{export.Triton, export.KServe, export.Ray, "inference-gateway"}
	if got := Registry().Names(); !slices.Equal(got, want) {
		t.Errorf("targets %v, want %v", got, want)
	}
	for _, n := range export.Classic.Names() {
		if _, ok := Registry().Lookup(n); !ok {
			t.Errorf("classic target %s not in the in-tree registry", n)
		}
	}
}
