package dataplane

import "testing"

// TestSideTable: values set by ID read back across chunks, unset IDs read zero, and forget
// drops only the chunks wholly below the ID it is given.
func TestSideTable(t *testing.T) {
	tests := []struct {
		name   string
		set    []ReqID
		forget ReqID
		// gone are set IDs that must read zero after forget; the rest must keep their value.
		gone []ReqID
	}{
		{"one chunk kept", []ReqID{0, 5, chunkLen - 1}, chunkLen - 1, nil},
		{"first chunk dropped", []ReqID{3, chunkLen + 2}, chunkLen + 1, []ReqID{3}},
		{"sparse chunks", []ReqID{1, 3*chunkLen + 7}, 2 * chunkLen, []ReqID{1}},
		{"all dropped", []ReqID{2, chunkLen + 9}, 5 * chunkLen, []ReqID{2, chunkLen + 9}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s sideTable[int64]
			for _, id := range tc.set {
				*s.ref(id) = int64(id) + 1
			}
			if unset := tc.set[len(tc.set)-1] + 1; s.at(unset) != 0 {
				t.Errorf("unset id %d reads %d", unset, s.at(unset))
			}
			s.forget(tc.forget)
			for _, id := range tc.set {
				want := int64(id) + 1
				for _, g := range tc.gone {
					if g == id {
						want = 0
					}
				}
				if got := s.at(id); got != want {
					t.Errorf("id %d reads %d after forget(%d), want %d", id, got, tc.forget, want)
				}
			}
			if s.base%chunkLen != 0 {
				t.Errorf("base %d not a multiple of the chunk length", s.base)
			}
		})
	}
}
