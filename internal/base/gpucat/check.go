package gpucat

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// largeEngineBytes is the memory from which vLLM V1 gives a GPU its large batch defaults
// (vllm/engine/arg_utils.py, EngineArgs.get_batch_defaults: 70 GiB and more, the A100
// excepted).
const largeEngineBytes = 70 * gib

// LargeEngine reports whether vLLM gives GPU type name its large-GPU defaults
// (max_num_batched_tokens 8192, max_num_seqs 1024): a catalogue type by its memory, as vLLM
// decides; any other name when it contains such a type's name or a named large type's
// (an "H100 PCIe", a GH200, an MI300X), case-insensitively.
func LargeEngine(name string) bool {
	if s, ok := Find(name); ok {
		return s.largeEngine()
	}
	g := strings.ToLower(name)
	for _, s := range specs() {
		if s.largeEngine() && strings.Contains(g, strings.ToLower(s.Name)) {
			return true
		}
	}
	for _, n := range named {
		if n.LargeEngine && strings.Contains(g, strings.ToLower(n.Name)) {
			return true
		}
	}
	return false
}

func (s Spec) largeEngine() bool {
	return s.MemoryBytes >= largeEngineBytes && !strings.Contains(strings.ToLower(s.Name), "a100")
}

// archs are the micro-architectures, oldest first, with the dtypes their tensor cores add.
var archs = map[string]struct{ tf32, fp8, fp4 bool }{
	"pascal": {}, "volta": {}, "turing": {},
	"ampere": {tf32: true}, "ada": {tf32: true, fp8: true}, "hopper": {tf32: true, fp8: true},
	"blackwell": {tf32: true, fp8: true, fp4: true},
}

// productGB is the memory size a product name states ("Tesla V100-SXM2-16GB" → 16).
var productGB = regexp.MustCompile(`(\d+)GB`)

// datePattern is a price's month.
var datePattern = regexp.MustCompile(`^\d{4}-(0[1-9]|1[0-2])$`)

// maxUSDPerGPUHour bounds a list price: no GPU rents for more (a typo guard).
const maxUSDPerGPUHour = 100

// Check reports every way the entry is incomplete or at odds with itself or the catalogue:
// a missing rate, size or link; dtype peaks the architecture does not have (or lacks); a
// memory size other than the one its product name states; a price without its offer,
// source or month; a stand-in that is not measured, or not of the same architecture where
// that architecture has a measured GPU.
func (s Spec) Check() error {
	var errs []error
	bad := func(field string, v any, rule string, a ...any) {
		errs = append(errs, fmt.Errorf("GPU %s: %s: %v: %s", s.Name, field, v, fmt.Sprintf(rule, a...)))
	}
	if s.Name == "" || strings.ContainsAny(s.Name, " \t/") {
		bad("name", fmt.Sprintf("%q", s.Name), "must be one word")
	}
	a, ok := archs[s.Arch]
	if !ok {
		bad("arch", s.Arch, "unknown architecture")
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"fp32_tflops", s.FP32TFLOPS}, {"fp16_tflops", s.FP16TFLOPS}, {"mem_bw_gbps", s.MemBWGBps}, {"host_link_gbps", s.HostLinkGBps}} {
		if !(f.v > 0) {
			bad(f.name, f.v, "must be > 0")
		}
	}
	if (s.TF32TFLOPS > 0) != a.tf32 {
		bad("tf32_tflops", s.TF32TFLOPS, "%s has TF32 tensor cores: %v", s.Arch, a.tf32)
	}
	if (s.FP8TFLOPS > 0) != a.fp8 {
		bad("fp8_tflops", s.FP8TFLOPS, "%s has FP8 tensor cores: %v", s.Arch, a.fp8)
	}
	if (s.FP4TFLOPS > 0) != a.fp4 {
		bad("fp4_tflops", s.FP4TFLOPS, "%s has FP4 tensor cores: %v", s.Arch, a.fp4)
	}
	if s.SMs <= 0 || s.L2Bytes <= 0 || s.MemoryBytes <= 0 {
		bad("sms/l2/memory", fmt.Sprintf("%d/%d/%d", s.SMs, s.L2Bytes, s.MemoryBytes), "must all be > 0")
	}
	if s.Class != "high" && s.Class != "low" {
		bad("class", s.Class, "must be high or low")
	}
	if s.MaxVGPU < 1 || s.MaxVGPU > 4 {
		bad("max_vgpu", s.MaxVGPU, "must be in 1..4")
	}
	if s.NVLinkGBps < 0 {
		bad("nvlink_gbps", s.NVLinkGBps, "must be >= 0")
	}
	if s.Product == "" {
		bad("product", `""`, "must name the NVML product (the node label)")
	} else if m := productGB.FindStringSubmatch(s.Product); m != nil {
		gb, _ := strconv.ParseInt(m[1], 10, 64)
		if s.MemoryBytes != gb*gib {
			bad("memory_bytes", s.MemoryBytes, "the product %q states %d GB (%d bytes as the catalogue states sizes)", s.Product, gb, gb*gib)
		}
	}
	if p := s.Price; p != nil {
		if !(p.USDPerGPUHour > 0 && p.USDPerGPUHour <= maxUSDPerGPUHour) {
			bad("price", p.USDPerGPUHour, "must be in (0, %d] USD per GPU-hour", maxUSDPerGPUHour)
		}
		if p.Offer == "" || p.Source == "" || !datePattern.MatchString(p.Date) {
			bad("price", fmt.Sprintf("%+v", *p), "must name its offer, its source and its month (YYYY-MM)")
		}
	}
	errs = append(errs, s.checkMeasured()...)
	return errors.Join(errs...)
}

// checkMeasured holds the kernel-table facts: a measured type names its stand-in, every
// type a measured GPU standing for its architecture — its own architecture's where one is
// measured.
func (s Spec) checkMeasured() []error {
	var errs []error
	bad := func(field, v, rule string) {
		errs = append(errs, fmt.Errorf("GPU %s: %s: %q: %s", s.Name, field, v, rule))
	}
	measured := map[string]Spec{}
	for _, o := range specs() {
		if o.Measured() {
			measured[o.Name] = o
		}
	}
	if s.Measured() {
		measured[s.Name] = s
	}
	if n, ok := measured[s.NearestMeasured]; !ok {
		bad("nearest_measured", s.NearestMeasured, "must name a GPU with kernel tables")
	} else if n.Arch != s.Arch {
		for _, o := range measured {
			if o.Arch == s.Arch {
				bad("nearest_measured", s.NearestMeasured, "must be of its architecture "+s.Arch+" (measured: "+o.Name+")")
				break
			}
		}
	}
	if s.Measured() {
		if o, ok := measured[s.StandIn]; !ok || o.Name == s.Name {
			bad("stand_in", s.StandIn, "a measured GPU names another measured GPU to stand in for it")
		}
	} else if s.StandIn != "" {
		bad("stand_in", s.StandIn, "only a measured GPU has a stand-in")
	}
	return errs
}
