package formats

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// TestWeightBytesBounded: weight_bytes of 2^63-1 passed validation (and an 80 GB GPU's
// plan); it is refused at its path, naming the value and the bound, while 2^50 passes.
func TestWeightBytesBounded(t *testing.T) {
	for _, tc := range []struct {
		v   int64
		err string
	}{
		{math.MaxInt64, "must be <= 2^50"},
		{MaxWeightBytes + 1, "must be <= 2^50"},
		{MaxWeightBytes, ""},
		{-1, "must be > 0"},
	} {
		doc := loadGood(t, "profile.json").(*Profile)
		doc.LLMs[0].WeightBytes = tc.v
		var got string
		for _, e := range Validate(doc, inTree) {
			if e.Path == "llms[0].weight_bytes" {
				got = e.Error()
			}
		}
		switch {
		case tc.err == "" && got != "":
			t.Errorf("weight_bytes %d: %s", tc.v, got)
		case tc.err != "" && (!strings.Contains(got, tc.err) || !strings.Contains(got, strconv.FormatInt(tc.v, 10))):
			t.Errorf("weight_bytes %d: %q, want an error naming the value with %q", tc.v, got, tc.err)
		}
	}
}
