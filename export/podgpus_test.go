package export

import (
	"reflect"
	"strings"
	"testing"
)

// TestPodGPUs: a model's instance groups get the GPU ids its own pod sees, 0..n-1 in the
// plan's order of its distinct GPUs; groups that share a plan GPU share the pod's; a model on
// more GPUs than a server of its type holds is refused, naming the model, type and counts.
func TestPodGPUs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		plan      [][]int
		want      [][]int
		perServer int
		err       string
	}{
		{"one GPU far in the fleet", [][]int{{9}}, [][]int{{0}}, 8, ""},
		{"replicas on scattered GPUs", [][]int{{6}, {1}, {3}}, [][]int{{2}, {0}, {1}}, 8, ""},
		{"a replica over two GPUs", [][]int{{4, 5}, {7}}, [][]int{{0, 1}, {2}}, 4, ""},
		{"groups sharing a GPU", [][]int{{2}, {2, 3}}, [][]int{{0}, {0, 1}}, 0, ""},
		{"no groups", nil, [][]int{}, 8, ""},
		{"past a server", [][]int{{0}, {1}, {2}, {3}, {4}}, [][]int{{0}, {1}, {2}, {3}, {4}}, 4, "model m: its instances run on 5 A100 GPUs, more than a server's 4 (per_server)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PodGPUs(tc.plan); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("PodGPUs(%v) = %v, want %v", tc.plan, got, tc.want)
			}
			err := PodFits("m", "A100", tc.plan, map[string]int{"A100": tc.perServer})
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("PodFits: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("PodFits: %v, want %q", err, tc.err)
			}
		})
	}
}
