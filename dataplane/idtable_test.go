package dataplane

import "testing"

// TestIDTable: entries are read back until forgotten, a forgotten or unset id reads as the
// zero value, setting a forgotten id is ignored, and Forget trims the front so the table
// holds only the live span.
func TestIDTable(t *testing.T) {
	type op struct {
		kind string // set, unset, forget
		id   ReqID
		x    int
	}
	cases := []struct {
		name      string
		ops       []op
		want      map[ReqID]int // id → At
		forgotten []ReqID
		size      int
	}{
		{"empty", nil, map[ReqID]int{0: 0, 5: 0}, nil, 0},
		{"set grows to the id", []op{{"set", 3, 7}}, map[ReqID]int{3: 7, 2: 0, 4: 0}, nil, 4},
		{"unset keeps the size", []op{{"set", 3, 7}, {"unset", 3, 0}, {"unset", 9, 0}}, map[ReqID]int{3: 0}, nil, 4},
		{"forget trims the front", []op{{"set", 1, 1}, {"set", 4, 4}, {"forget", 2, 0}}, map[ReqID]int{1: 0, 4: 4}, []ReqID{0, 2}, 2},
		{"forget past the end empties", []op{{"set", 1, 1}, {"forget", 6, 0}, {"set", 3, 3}, {"set", 8, 8}}, map[ReqID]int{3: 0, 8: 8}, []ReqID{6}, 2},
		{"forget below base is a no-op", []op{{"forget", 4, 0}, {"forget", 2, 0}, {"set", 5, 5}}, map[ReqID]int{5: 5}, []ReqID{4}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var tb IDTable[int]
			for _, o := range c.ops {
				switch o.kind {
				case "set":
					tb.Set(o.id, o.x)
				case "unset":
					tb.Unset(o.id)
				case "forget":
					tb.Forget(o.id)
				}
			}
			for id, w := range c.want {
				if got := tb.At(id); got != w {
					t.Errorf("At(%d) = %d, want %d", id, got, w)
				}
			}
			for _, id := range c.forgotten {
				if !tb.Forgotten(id) {
					t.Errorf("Forgotten(%d) = false", id)
				}
			}
			if got := tb.Size(); got != c.size {
				t.Errorf("Size() = %d, want %d", got, c.size)
			}
		})
	}
}
