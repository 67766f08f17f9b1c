package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/internal/run/validate"
)

// FuzzWrittenKinds: whatever the bytes, recognising a written kind and reading it never
// panics, and what one reading writes reads back to itself (the round trip is a fixed point).
func FuzzWrittenKinds(f *testing.F) {
	for _, seed := range []string{
		`{"load":0.5,"id":0,"class":"m1","arrival_us":6907,"done_us":37134,"outcome":"completed"}` + "\n",
		`{"system":"ppipe","sweep":"rate","currency":"USD","points":[{"x":1,"label":"1×","cost_per_hour":2.24,"single_type_cost_per_hour":2.24}]}`,
		`{"apiVersion":"plan/v1","kind":"SimulationReport","plan":"p","policy":"x","trace":"poisson","seed":1,"duration_us":1,"base_rps":[],"points":[{"load":1}],"max_load_99":0}`,
		`{"kind":"SolverBench","result":{}}`,
		`{"schedule":"s","trace":"t","switch_delay_s":0,"switch_ahead":false,"windows":[],"overall":{},"peak":{}}`,
	} {
		f.Add([]byte(seed))
	}
	if b, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "testdata", "autopilot", "step.json")); err == nil {
		f.Add(b)
	}
	app := &App{Systems: systems.Default()}
	f.Fuzz(func(t *testing.T, data []byte) {
		k, ok := validate.KindOf(app.Systems, toolBenches, data)
		if !ok {
			return
		}
		once, err := k.Reread("f", data)
		if err != nil {
			return
		}
		k2, ok := validate.KindOf(app.Systems, toolBenches, once)
		if !ok || k2.Name != k.Name {
			t.Fatalf("%s rewritten is not recognised as %s: %q", k.Name, k.Name, once)
		}
		twice, err := k.Reread("f", once)
		if err != nil || !bytes.Equal(once, twice) {
			t.Fatalf("%s: rewriting again: %v\n%q\n%q", k.Name, err, once, twice)
		}
	})
}
