package sim

import (
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// TestWholeGPUBusyCountedOnce: whole-GPU workers that share a GPU (DyOrc's one worker per
// stage, a service batch across workflows dispatched as one engine batch per stage) make the
// GPU busy for the union of their intervals, not their sum; slices (VGPU > 1) still count
// busy/v each.
func TestWholeGPUBusyCountedOnce(t *testing.T) {
	dep := &dataplane.Deployment{Topo: dataplane.Topology{
		GPUs: []dataplane.GPU{{Type: "A"}, {Type: "A"}},
		Workers: []dataplane.Worker{
			{GPU: 0, VGPU: 1}, {GPU: 0, VGPU: 1}, {GPU: 0, VGPU: 1},
			{GPU: 1, VGPU: 1},
		},
	}}
	for _, tc := range []struct {
		name string
		runs [][3]int64 // worker, start, end
		want []dataplane.Time
	}{
		{"same interval on three workers", [][3]int64{{0, 0, 10}, {1, 0, 10}, {2, 0, 10}}, []dataplane.Time{10, 0}},
		{"overlapping ends", [][3]int64{{0, 0, 10}, {1, 0, 14}, {2, 5, 12}}, []dataplane.Time{14, 0}},
		{"disjoint", [][3]int64{{0, 0, 10}, {1, 20, 25}, {3, 20, 30}}, []dataplane.Time{15, 10}},
		{"nested", [][3]int64{{0, 0, 30}, {1, 5, 10}, {2, 30, 31}}, []dataplane.Time{31, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCollector(dep, 0, true, 0, nil)
			for _, r := range tc.runs {
				c.run(dataplane.WorkerID(r[0]), dataplane.Time(r[1]), dataplane.Time(r[2]))
			}
			for g, w := range tc.want {
				if c.wholeBusy[g] != w {
					t.Fatalf("GPU %d busy %d, want %d", g, c.wholeBusy[g], w)
				}
			}
		})
	}
}
