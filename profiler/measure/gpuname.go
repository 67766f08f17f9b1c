package measure

import (
	"context"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// gpuFamily finds the GPU type in a marketing name ("NVIDIA A100-SXM4-40GB" → "A100"), using
// the type names of the profiler's GPU table and cluster files.
var gpuFamily = regexp.MustCompile(`(?i)(?:^|[^A-Z0-9])(H200|H100|A100|A10G|A10|A30|A40|L40S|L40|L4|V100|T4|P100|P40|P4)(?:$|[^A-Z0-9])`)

// GPUType maps an nvidia-smi GPU name to the short type name profiles use; "" if unknown.
func GPUType(name string) string {
	m := gpuFamily.FindStringSubmatch(name)
	if m == nil {
		return ""
	}
	t := strings.ToUpper(m[1])
	if t == "A10G" {
		return "A10" // the AWS variant of the A10
	}
	return t
}

// DeviceType names the GPU type of a device for profile entries: "cpu" for the CPU, the
// type nvidia-smi reports for cuda:N when it can be identified, else the device string.
func DeviceType(device string) string {
	kind, id, err := ParseDevice(device)
	if err != nil || kind == "cpu" {
		return "cpu"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "-i", strconv.Itoa(id)).Output()
	if err != nil {
		return device
	}
	if t := GPUType(strings.TrimSpace(string(out))); t != "" {
		return t
	}
	return device
}
