package workload

import "testing"

func TestSig3(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{{0.5, "0.5"}, {12.345, "12.3"}, {999.4, "999"}, {1000, "1000"}, {123456.7, "123457"}} {
		if got := sig3(tc.in); got != tc.want {
			t.Errorf("sig3(%g) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
