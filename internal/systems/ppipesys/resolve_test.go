package ppipesys

import (
	"testing"

	"github.com/plan-dev/plan/formats"
)

// TestResolveOptionsFillSurplus: the recorded fill_surplus is re-used; plans from before the
// option (no key) re-solve without filling, as they were made.
func TestResolveOptionsFillSurplus(t *testing.T) {
	for _, tc := range []struct {
		rec  map[string]string
		want bool
	}{
		{map[string]string{"fill_surplus": "true"}, true},
		{map[string]string{"fill_surplus": "false"}, false},
		{map[string]string{}, false},
	} {
		p := &formats.Plan{PPipe: &formats.PPipePlan{Strategy: "ppipe", MaxPartitions: 2}}
		p.Provenance.Options = tc.rec
		o, err := resolveOptions(p, 0)
		if err != nil {
			t.Fatal(err)
		}
		if o.FillSurplus != tc.want {
			t.Errorf("options %v: FillSurplus %v, want %v", tc.rec, o.FillSurplus, tc.want)
		}
	}
	p := &formats.Plan{PPipe: &formats.PPipePlan{Strategy: "ppipe"}}
	p.Provenance.Options = map[string]string{"gap": "x"}
	if _, err := resolveOptions(p, 0); err == nil {
		t.Error("unreadable recorded gap accepted")
	}
}
