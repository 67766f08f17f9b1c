package export

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/plan-dev/plan/internal/base/gpucat"
)

// How each target selects a GPU type on a real cluster (ecosystem.md §7).
//
// Kubernetes: NVIDIA's GPU feature discovery (GFD, part of the GPU Operator) labels every GPU
// node nvidia.com/gpu.product with the product name the driver reports (nvidia-smi's "Product
// Name", NVML's nvmlDeviceGetName), spaces turned into dashes: "NVIDIA L4" → NVIDIA-L4. A
// selector with our short names (L4, A100) matches no node, so pods stay Pending.
//
// Ray: a replica asks for a GPU type with ray_actor_options.accelerator_type. Ray labels each
// node with the accelerator type it derives from the same NVML name: the word after the
// vendor prefix (ray/_private/accelerators/nvidia_gpu.py, NVIDIA_GPU_NAME_PATTERN
// `\w+\s+([A-Z0-9]+)`: "Tesla V100-SXM2-16GB" → V100; ray/util/accelerators lists the
// constants). Custom resources ({L4: 1}) exist only on nodes started with --resources.
//
// Both derive from the GPU catalogue (internal/base/gpucat): each type's NVML product name, of
// the variant its specs describe (P4, T4, L4, A10, L40S PCIe cards; V100 SXM2 16 GB; A100
// SXM4 80 GB; H100 SXM5 80 GB HBM3; H200 SXM 141 GB; B200 180 GB), and the product names of
// the types it knows by name only (PARD's 2080 Ti, DyOrc's A800). Clusters differ (PCIe vs
// SXM, 40 vs 80 GB, MIG, cloud variants such as A10G): a cluster file's gpus[].node_labels
// replaces the selector of its GPU type.

// ProductLabel is GFD's node label of the GPU product.
const ProductLabel = "nvidia.com/gpu.product"

// rayNamePattern is Ray's rule from an NVML name to its accelerator type.
var rayNamePattern = regexp.MustCompile(`^\w+\s+([A-Z0-9]+)`)

// KnownGPULabels lists the GPU types with a built-in label, sorted.
func KnownGPULabels() []string {
	var out []string
	for _, s := range gpucat.All() {
		out = append(out, s.Name)
	}
	for _, n := range gpucat.NamedTypes() {
		if n.Product != "" {
			out = append(out, n.Name)
		}
	}
	slices.Sort(out)
	return out
}

// GPUProduct is the nvidia.com/gpu.product value GFD gives nodes of a known GPU type.
func GPUProduct(gpu string) (string, bool) {
	name, ok := gpucat.Product(gpu)
	return strings.ReplaceAll(name, " ", "-"), ok
}

// RayAccelerator is Ray's accelerator_type of a known GPU type.
func RayAccelerator(gpu string) (string, bool) {
	name, _ := gpucat.Product(gpu)
	m := rayNamePattern.FindStringSubmatch(name)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// ClusterLabelField names the cluster-file field that overrides a GPU type's labels.
const ClusterLabelField = "gpus[].node_labels"

// ErrNoGPULabel is wrapped by the error of a GPU type with neither a known label nor an
// override: `plan export` exits 2 on it.
var ErrNoGPULabel = fmt.Errorf("no known node label")

// NodeSelector is the Kubernetes node selector of a GPU type: the cluster's node_labels for
// it (Options.NodeLabels) when given, else {nvidia.com/gpu.product: GFD's product name}.
func (o Options) NodeSelector(gpu string) (map[string]string, error) {
	if ls, ok := o.NodeLabels[gpu]; ok && len(ls) > 0 {
		sel := make(map[string]string, len(ls))
		for k, v := range ls {
			sel[k] = v
		}
		return sel, nil
	}
	p, ok := GPUProduct(gpu)
	if !ok {
		return nil, fmt.Errorf("GPU type %q: %w (known: %s): set %s for type %s in the cluster file (e.g. {%s: <the product your nodes carry>}) and pass it with --cluster",
			gpu, ErrNoGPULabel, strings.Join(KnownGPULabels(), ", "), ClusterLabelField, gpu, ProductLabel)
	}
	return map[string]string{ProductLabel: p}, nil
}

// RayAcceleratorType is the Ray accelerator_type of a GPU type: Ray's name for a known type;
// for a type the cluster file labels itself, the type's own name (Ray derives the name from
// the product, e.g. "NVIDIA A40" → A40: name custom types after it).
func (o Options) RayAcceleratorType(gpu string) (string, error) {
	if a, ok := RayAccelerator(gpu); ok {
		return a, nil
	}
	if _, err := o.NodeSelector(gpu); err != nil {
		return "", err
	}
	return gpu, nil
}
