package sim

import (
	"slices"
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// TestMergeSorted checks the total's merge of the applications' sorted latencies against
// sorting their concatenation, which the report computed before.
func TestMergeSorted(t *testing.T) {
	for _, tc := range []struct {
		name string
		runs [][]dataplane.Time
	}{
		{"none", nil},
		{"one", [][]dataplane.Time{{1, 2, 2, 9}}},
		{"empty runs", [][]dataplane.Time{{}, {3}, {}}},
		{"ties across runs", [][]dataplane.Time{{1, 5, 5}, {5, 5, 7}, {0, 5}}},
		{"interleaved", [][]dataplane.Time{{1, 4, 7, 10}, {2, 5, 8}, {3, 6, 9, 12, 15}, {-1}, {11, 13}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []dataplane.Time
			for _, r := range tc.runs {
				want = append(want, r...)
			}
			slices.Sort(want)
			got := mergeSorted(tc.runs)
			if !slices.Equal(got, want) {
				t.Errorf("mergeSorted(%v) = %v, want %v", tc.runs, got, want)
			}
		})
	}
}
