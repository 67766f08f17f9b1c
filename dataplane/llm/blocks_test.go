package llm_test

import (
	"testing"

	"github.com/plan-dev/plan/dataplane/llm"
)

// TestBlocks: the mask for a power-of-two block rounds as the division does, and the
// division stays for other block sizes and negative counts.
func TestBlocks(t *testing.T) {
	cases := []struct {
		block, tokens, want int
	}{
		{16, 0, 0},
		{16, 1, 16},
		{16, 15, 16},
		{16, 16, 16},
		{16, 17, 32},
		{16, 131071, 131072},
		{1, 7, 7},
		{32, 33, 64},
		{12, 13, 24}, // not a power of two: the division
		{12, 12, 12},
		{16, -1, 0},    // (−1+15)/16·16: truncation toward zero
		{16, -40, -16}, // (−40+15)/16 = −1 (a mask would give −32)
	}
	for _, c := range cases {
		m := &llm.Model{Block: c.block}
		if got := m.Blocks(c.tokens); got != c.want {
			t.Errorf("Blocks(%d) with block %d = %d, want %d", c.tokens, c.block, got, c.want)
		}
		if div := (c.tokens + c.block - 1) / c.block * c.block; div != c.want {
			t.Errorf("case %+v: the division gives %d", c, div)
		}
	}
}
