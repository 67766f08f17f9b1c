package measure

import (
	"context"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/plan-dev/plan/internal/base/gpucat"
)

// gpuFamily finds a GPU type in a marketing name ("NVIDIA A100-SXM4-40GB" → "A100"): any
// name of the GPU catalogue (its types, the types it knows by name, their aliases), whole.
// It is built on each call, so a type registered later is found too.
func gpuFamily() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(?:^|[^A-Z0-9])(` + strings.Join(quoteAll(gpucat.AllNames()), "|") + `)(?:$|[^A-Z0-9])`)
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = regexp.QuoteMeta(n)
	}
	return out
}

// GPUType maps an nvidia-smi GPU name to the short type name profiles use (an alias such as
// AWS's A10G to the type it is a variant of); "" if unknown.
func GPUType(name string) string {
	m := gpuFamily().FindStringSubmatch(name)
	if m == nil {
		return ""
	}
	return gpucat.Canonical(m[1])
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
