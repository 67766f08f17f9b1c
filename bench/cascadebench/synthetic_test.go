package cascadebench

import (
	"reflect"
	"sort"
	"testing"
)

// TestSyntheticShape: the arrival shape used without --trace is deterministic and has the
// documented coarse statistics (1,200 s, minimum and median 10 QPS, peak 80 QPS).
func TestSyntheticShape(t *testing.T) {
	q := syntheticQPS()
	if !reflect.DeepEqual(q, syntheticQPS()) {
		t.Fatal("two calls differ: the shape must be seeded")
	}
	s := append([]float64(nil), q...)
	sort.Float64s(s)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"seconds", float64(len(q)), 1200},
		{"min", s[0], 10},
		{"median", s[len(s)/2], 10},
		{"max", s[len(s)-1], 80},
	} {
		if c.got != c.want {
			t.Errorf("%s = %g, want %g", c.name, c.got, c.want)
		}
	}
}
