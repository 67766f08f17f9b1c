package export

import (
	"errors"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/profiler/gpus"
)

// TestGPULabels pins the labels real clusters carry for every GPU type plan knows: GPU
// feature discovery's nvidia.com/gpu.product and Ray's accelerator type.
func TestGPULabels(t *testing.T) {
	cases := []struct{ gpu, product, ray string }{
		{"P4", "Tesla-P4", "P4"},
		{"T4", "Tesla-T4", "T4"},
		{"L4", "NVIDIA-L4", "L4"},
		{"A10", "NVIDIA-A10", "A10"},
		{"V100", "Tesla-V100-SXM2-16GB", "V100"},
		{"A100", "NVIDIA-A100-SXM4-80GB", "A100"},
		{"H100", "NVIDIA-H100-80GB-HBM3", "H100"},
		{"H200", "NVIDIA-H200", "H200"},
		{"B200", "NVIDIA-B200", "B200"},
		{"A800", "NVIDIA-A800-SXM4-80GB", "A800"},
		{"2080Ti", "NVIDIA-GeForce-RTX-2080-Ti", "G"},
	}
	for _, c := range cases {
		p, ok := GPUProduct(c.gpu)
		r, rok := RayAccelerator(c.gpu)
		if !ok || !rok || p != c.product || r != c.ray {
			t.Errorf("%s: product %q (%v), ray %q (%v); want %q, %q", c.gpu, p, ok, r, rok, c.product, c.ray)
		}
	}
	// Every GPU of the catalogue, which the cluster validator knows too, has a label.
	for _, g := range gpus.Names() {
		if formats.KnownGPUMemory(g) == 0 {
			t.Errorf("GPU %s: the cluster validator does not know it", g)
		}
		if _, ok := GPUProduct(g); !ok {
			t.Errorf("GPU %s: no nvidia.com/gpu.product label", g)
		}
	}
}

// TestNodeSelectorOverride: node_labels replace the built-in selector; an unknown type
// without them is ErrNoGPULabel naming the type and the cluster field.
func TestNodeSelectorOverride(t *testing.T) {
	o := Options{NodeLabels: map[string]map[string]string{
		"A100": {ProductLabel: "NVIDIA-A100-PCIE-40GB"},
		"X9":   {"cloud.example.com/accelerator": "x9"},
	}}
	cases := []struct {
		gpu, key, want, ray string
		err                 bool
	}{
		{"A100", ProductLabel, "NVIDIA-A100-PCIE-40GB", "A100", false},
		{"L4", ProductLabel, "NVIDIA-L4", "L4", false},
		{"X9", "cloud.example.com/accelerator", "x9", "X9", false},
		{"Y7", "", "", "", true},
	}
	for _, c := range cases {
		sel, err := o.NodeSelector(c.gpu)
		ray, rerr := o.RayAcceleratorType(c.gpu)
		if c.err {
			if !errors.Is(err, ErrNoGPULabel) || !errors.Is(rerr, ErrNoGPULabel) {
				t.Errorf("%s: %v, %v: want ErrNoGPULabel", c.gpu, err, rerr)
			}
			continue
		}
		if err != nil || rerr != nil || sel[c.key] != c.want || len(sel) != 1 || ray != c.ray {
			t.Errorf("%s: selector %v (%v), ray %q (%v); want %s=%s, %s", c.gpu, sel, err, ray, rerr, c.key, c.want, c.ray)
		}
	}
}
