package kserve

import "testing"

func TestCheckModelVersion(t *testing.T) {
	for _, tc := range []struct {
		v  string
		ok bool
	}{{"", true}, {"1", true}, {"0", false}, {"01", false}, {"7", false}} {
		if err := CheckModelVersion("m", tc.v); (err == nil) != tc.ok {
			t.Errorf("CheckModelVersion(%q) = %v, want ok=%v", tc.v, err, tc.ok)
		}
	}
}
