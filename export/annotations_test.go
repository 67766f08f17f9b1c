package export

import (
	"maps"
	"testing"
)

// A readback gets back exactly the parameters a render wrote as plan.dev annotations: the
// system's own under its prefix, the shared ones as plan.X, nothing else (a cluster's own
// annotations, another system's prefix read as a shared key only once).
func TestAnnotationParams(t *testing.T) {
	for _, c := range []struct {
		name   string
		system string
		in     map[string]string
		want   map[string]string
	}{
		{"empty", "qlm", nil, map[string]string{}},
		{"own prefix", "cascade", map[string]string{"plan.dev/cascade.gear": "g"}, map[string]string{"cascade.gear": "g"}},
		{"shared key", "dyorc", map[string]string{"plan.dev/gpu": "A100"}, map[string]string{"plan.gpu": "A100"}},
		{"both, once each", "dyorc", map[string]string{"plan.dev/dyorc.gpus": "0,1", "plan.dev/model": "m"},
			map[string]string{"dyorc.gpus": "0,1", "plan.model": "m"}},
		{"other system's prefix is a shared key", "qlm", map[string]string{"plan.dev/cascade.gear": "g"}, map[string]string{"plan.cascade.gear": "g"}},
		{"foreign annotations left out", "qlm", map[string]string{"serving.kserve.io/deploymentMode": "RawDeployment", "plan.devx": "y"}, map[string]string{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := AnnotationParams(c.in, c.system); !maps.Equal(got, c.want) {
				t.Errorf("AnnotationParams(%v, %q) = %v, want %v", c.in, c.system, got, c.want)
			}
		})
	}
}
