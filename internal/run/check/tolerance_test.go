package check

import "testing"

func TestParseTolerance(t *testing.T) {
	for in, want := range map[string]float64{"1%": 0.01, "0.5 %": 0.005, "0.02": 0.02, "0": 0} {
		got, err := parseTolerance(in)
		if err != nil || got != want {
			t.Errorf("%q: %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "x", "-1%", "100%", "1", "NaN"} {
		if _, err := parseTolerance(in); err == nil {
			t.Errorf("%q: accepted", in)
		}
	}
}

func FuzzParseTolerance(f *testing.F) {
	for _, s := range []string{"1%", "0.01", " 2 % ", "-3", "1e-3", "%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseTolerance(s)
		if err == nil && !(v >= 0 && v < 1) {
			t.Fatalf("%q → %v accepted", s, v)
		}
	})
}
