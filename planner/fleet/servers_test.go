package fleet

import (
	"slices"
	"testing"

	"github.com/plan-dev/plan/formats"
)

func TestTakeBestFit(t *testing.T) {
	// GPUs 0-3 are A100s, 4-5 L4s: A100s in servers of 2 (0-1, 2-3), L4s per_server 4 (4-5).
	cl := &formats.Cluster{GPUs: []formats.GPUPool{
		{Type: "A100", Count: 4, PerServer: 2, MemoryBytes: 80e9},
		{Type: "L4", Count: 2, PerServer: 4},
	}}
	listed := &formats.Cluster{GPUs: cl.GPUs, Servers: []formats.Server{{Name: "big", GPU: "A100", GPUs: 3}}}
	type take struct {
		gpu  string
		k    int
		want []int // nil: no server holds k
	}
	cases := []struct {
		name  string
		c     *formats.Cluster
		takes []take
	}{
		{"best fit keeps a whole server free", cl, []take{{"A100", 1, []int{0}}, {"A100", 1, []int{1}}, {"A100", 2, []int{2, 3}}, {"A100", 1, nil}}},
		{"wider than any server", cl, []take{{"A100", 3, nil}, {"L4", 2, []int{4, 5}}}},
		{"listed servers first, the rest per_server", listed, []take{{"A100", 3, []int{0, 1, 2}}, {"A100", 1, []int{3}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := Servers(c.c)
			for _, tk := range c.takes {
				got, ok := TakeBestFit(srv, tk.gpu, tk.k)
				if ok != (tk.want != nil) || !slices.Equal(got, tk.want) {
					t.Fatalf("take %d %s: %v, %v; want %v", tk.k, tk.gpu, got, ok, tk.want)
				}
			}
		})
	}
	if s := Servers(cl); s[0].Mem != 80e9 || s[0].Free() != 2 {
		t.Fatalf("first server: mem %d, free %d; want 80e9, 2", s[0].Mem, s[0].Free())
	}
}
