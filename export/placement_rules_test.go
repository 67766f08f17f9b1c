package export

import (
	"fmt"
	"testing"
)

// TestPoolGroups: a pool of count 1/vgpu slices starts exactly count Triton instances, at
// most vgpu per GPU, each group pinned to its own GPUs (without gpus Triton would start
// count instances on every GPU it sees).
func TestPoolGroups(t *testing.T) {
	cases := []struct {
		count, vgpu, first int
		want               string
		next               int
	}{
		{4, 1, 0, "[{1 [0 1 2 3]}]", 4},
		{12, 1, 0, "[{1 [0 1 2 3 4 5 6 7 8 9 10 11]}]", 12},
		{5, 2, 3, "[{2 [3 4]} {1 [5]}]", 6},
		{1, 4, 0, "[{1 [0]}]", 1},
		{8, 4, 1, "[{4 [1 2]}]", 3},
		{3, 0, 0, "[{1 [0 1 2]}]", 3},
	}
	for _, c := range cases {
		gs, next := PoolGroups(c.count, c.vgpu, c.first)
		n := 0
		for _, g := range gs {
			n += g.Count * len(g.GPUs)
		}
		if got := fmt.Sprint(gs); got != c.want || next != c.next || n != c.count {
			t.Errorf("PoolGroups(%d, %d, %d) = %s, next %d (%d instances); want %s, next %d", c.count, c.vgpu, c.first, got, next, n, c.want, c.next)
		}
	}
}

// TestNewBatcher: KServe's agent exits with maxLatency <= 0, so a batcher is written only
// where batching happens and waits at least 1 ms.
func TestNewBatcher(t *testing.T) {
	cases := []struct {
		batch         int
		delayUs, toUs int64
		want          string
	}{
		{1, 0, 5000, "<nil>"},
		{4, 0, 5000, "&{4 1 1}"},
		{4, 200, 5000, "&{4 1 1}"},
		{8, 2500, 2_500_000, "&{8 3 3}"},
	}
	for _, c := range cases {
		if got := fmt.Sprint(NewBatcher(c.batch, c.delayUs, c.toUs)); got != c.want {
			t.Errorf("NewBatcher(%d, %d, %d) = %s, want %s", c.batch, c.delayUs, c.toUs, got, c.want)
		}
	}
}
