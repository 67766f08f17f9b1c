package cascadesys

import (
	"reflect"
	"testing"

	pc "github.com/plan-dev/plan/planner/cascade"
)

// TestDefaultNotes: the threshold grid is named at its default, the cascade length where
// --max-len was left to the workload; flags given name nothing.
func TestDefaultNotes(t *testing.T) {
	def := pc.DefaultFlags()
	set := def
	set.Levels, set.MaxLen = 10, 2
	cases := []struct {
		name string
		f    pc.Flags
		len  int
		want []string
	}{
		{"defaults", def, 3, []string{"--levels 20 (default): each model's threshold searched on a 20-level certainty grid",
			"--max-len unset: cascades of up to 3 models searched (the workload's own)"}},
		{"given", set, 2, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := defaultNotes(c.f, pc.Options{Search: pc.SearchOptions{MaxLen: c.len}}); !reflect.DeepEqual(got, c.want) {
				t.Errorf("notes %q, want %q", got, c.want)
			}
		})
	}
}
