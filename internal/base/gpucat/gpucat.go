// Package gpucat is the one catalogue of GPU types: every fact plan holds about a GPU — its
// memory, bandwidth, dense peak rates by dtype, links, list price, the node label real
// clusters carry, the name of its measured kernel tables, the measured GPU that stands for
// its architecture — stated once, in one entry. The roofline, the LLM estimator, cluster
// validation, the default prices, the exporters' node selectors and the kernel tables all
// look a type up here, so a new GPU type is one entry (plus calibration tables where it is
// measured). It imports nothing of the module: every layer may read it.
//
// Check holds every entry to the rules that keep the facts from drifting apart: a complete
// entry, a memory size that agrees with the product name the driver reports, a stand-in of
// the same architecture where one is measured.
package gpucat

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Precision names an arithmetic mode.
type Precision string

// Precisions the catalogue carries peak rates for.
const (
	FP32 Precision = "fp32"
	TF32 Precision = "tf32"
	FP16 Precision = "fp16"
)

// Price is a public on-demand list price (ecosystem-dropin.md §6: normalise to $/GPU-h with
// region, date and provisioning): USD per GPU-hour, all-in (a VM's price divided by its
// GPUs), with what was priced, who published it and the month it was current.
type Price struct {
	USDPerGPUHour float64
	// Offer is what was priced (instance, region), Source who published it, Date the month
	// the price was current (YYYY-MM).
	Offer, Source, Date string
}

// Spec describes one GPU type.
type Spec struct {
	Name string
	// Arch is the micro-architecture (pascal, turing, volta, ampere, ada, hopper, blackwell).
	Arch string
	// Peak TFLOPS per precision, dense. TF32 = 0 where there are no TF32 tensor cores.
	FP32TFLOPS, TF32TFLOPS, FP16TFLOPS float64
	// FP8TFLOPS and FP4TFLOPS are the dense FP8 and FP4 tensor-core peaks (0: no such
	// tensor cores — FP8 before Ada and Hopper, FP4 before Blackwell — where quantized
	// weights run at FP16 compute).
	FP8TFLOPS, FP4TFLOPS float64
	// MemBWGBps is DRAM bandwidth in GB/s (10^9 bytes/s).
	MemBWGBps float64
	SMs       int
	// MemoryBytes is the memory one GPU offers, the total vLLM's KV budget starts from
	// (its gpu_memory_utilization share of it) and the planners place models in. Each
	// entry says where its figure comes from.
	MemoryBytes int64
	L2Bytes     int64
	// Class is PPipe's GPU class: "high" or "low".
	Class string
	// MaxVGPU is the largest slice level v (1/v of the GPU) that profiles may use; PPipe runs
	// P4 whole only.
	MaxVGPU int
	// HostLinkGBps is the host↔GPU link bandwidth in GB/s (PCIe or NVLink-C2C), for model loads.
	// It is also the GPU↔GPU bandwidth of tensor-parallel collectives over PCIe.
	HostLinkGBps float64
	// NVLinkGBps is the GPU↔GPU NVLink bandwidth per GPU and direction in GB/s (0: none; the
	// SXM parts' datasheet figure, half the bidirectional number NVIDIA quotes).
	NVLinkGBps float64
	// Price is the default list price (nil: none; a cluster must give price_per_hour).
	Price *Price
	// Product is the NVML product name of the variant these specs describe (nvidia-smi's
	// "Product Name"), from which GPU feature discovery and Ray label nodes.
	Product string
	// KernelTable is the system name of the GPU's measured kernel tables
	// (profiler/kerneltab; "" = not measured).
	KernelTable string
	// NearestMeasured is the measured GPU whose fitted roofline constants stand for this
	// type's architecture (a GPU without tables borrows them).
	NearestMeasured string
	// StandIn is, for a measured GPU, the other measured GPU that would stand in for it —
	// the leave-one-GPU-out the estimate's error band comes from ("" = not measured).
	StandIn string
}

const (
	gib = int64(1) << 30
	mib = int64(1) << 20
)

// Memory sizes. The data-centre HBM parts state their nominal size in GiB, within 0.5% of
// the total the device reports (nvidia-smi's FB memory total, the total vLLM's
// determine_available_memory starts from): A100 80 GiB = the A100-SXM4-80GB's 81920 MiB,
// H100 80 GiB for the H100 80GB HBM3's 81559 MiB (the figure the bundled vLLM runs'
// KV-capacity validation holds, bench/vllmruns), H200 141 GiB for its 143771 MiB, B200
// 180 GiB for its 183359 MiB. The PCIe cards state their nominal size too (P4, T4, L4, A10,
// V100 16 GiB); the L40S its 48 GB, which is within 1% of the 46068 MiB it reports.
var table = []Spec{
	// Tesla P4 datasheet: 5.5 TFLOPS FP32, 192 GB/s GDDR5, 8 GB, 20 SMs (GP104), 2 MB L2.
	// Pascal GP104 runs FP16 at 1/64 rate.
	{Name: "P4", Arch: "pascal", FP32TFLOPS: 5.5, FP16TFLOPS: 0.09, MemBWGBps: 192, SMs: 20, MemoryBytes: 8 * gib, L2Bytes: 2 * mib, Class: "low", MaxVGPU: 1, HostLinkGBps: 12,
		Price:   &Price{0.79, "GCE n1-standard-4 + 1×P4, us-central1 (0.60 GPU + 0.19 VM)", "Google Compute Engine GPU and VM pricing", "2025-06"},
		Product: "Tesla P4", NearestMeasured: "A100"},
	// T4: 8.1 FP32, 65 FP16 tensor, 320 GB/s GDDR6, 16 GB, 40 SMs, 4 MB L2.
	{Name: "T4", Arch: "turing", FP32TFLOPS: 8.1, FP16TFLOPS: 65, MemBWGBps: 320, SMs: 40, MemoryBytes: 16 * gib, L2Bytes: 4 * mib, Class: "low", MaxVGPU: 4, HostLinkGBps: 12,
		Price:   &Price{0.53, "AWS g4dn.xlarge (1×T4), us-east-1", "AWS EC2 On-Demand pricing", "2025-06"},
		Product: "Tesla T4", NearestMeasured: "A100"},
	// L4: 30.3 FP32, 60 TF32 (120 with sparsity), 121 FP16, 242.5 FP8, 300 GB/s, 24 GB, 58 SMs, 48 MB L2.
	{Name: "L4", Arch: "ada", FP32TFLOPS: 30.3, TF32TFLOPS: 60, FP16TFLOPS: 121, FP8TFLOPS: 242.5, MemBWGBps: 300, SMs: 58, MemoryBytes: 24 * gib, L2Bytes: 48 * mib, Class: "high", MaxVGPU: 4, HostLinkGBps: 25,
		Price:   &Price{0.80, "AWS g6.xlarge (1×L4), us-east-1", "AWS EC2 On-Demand pricing", "2025-06"},
		Product: "NVIDIA L4", NearestMeasured: "L40S"},
	// A10: 31.2 FP32, 62.5 TF32, 125 FP16, 600 GB/s, 24 GB, 72 SMs, 6 MB L2.
	{Name: "A10", Arch: "ampere", FP32TFLOPS: 31.2, TF32TFLOPS: 62.5, FP16TFLOPS: 125, MemBWGBps: 600, SMs: 72, MemoryBytes: 24 * gib, L2Bytes: 6 * mib, Class: "high", MaxVGPU: 4, HostLinkGBps: 25,
		Price:   &Price{1.01, "AWS g5.xlarge (1×A10G), us-east-1", "AWS EC2 On-Demand pricing", "2025-06"},
		Product: "NVIDIA A10", NearestMeasured: "A100"},
	// V100 SXM2 16 GB: 15.7 FP32, 125 FP16 tensor, 900 GB/s HBM2, 80 SMs, 6 MB L2;
	// second-generation NVLink, 300 GB/s bidirectional.
	{Name: "V100", Arch: "volta", FP32TFLOPS: 15.7, FP16TFLOPS: 125, MemBWGBps: 900, SMs: 80, MemoryBytes: 16 * gib, L2Bytes: 6 * mib, Class: "high", MaxVGPU: 4, HostLinkGBps: 12, NVLinkGBps: 150,
		Price:   &Price{3.06, "AWS p3.2xlarge (1×V100), us-east-1", "AWS EC2 On-Demand pricing", "2025-06"},
		Product: "Tesla V100-SXM2-16GB", NearestMeasured: "A100"},
	// L40S (NVIDIA L40S datasheet): 91.6 FP32, 183 TF32, 362 FP16/BF16 and 733 FP8 tensor dense
	// (twice each with sparsity), 864 GB/s GDDR6, 48 GB, 142 SMs (AD102), 96 MB L2; PCIe Gen4 x16,
	// no NVLink (tensor-parallel collectives run over PCIe).
	{Name: "L40S", Arch: "ada", FP32TFLOPS: 91.6, TF32TFLOPS: 183, FP16TFLOPS: 362, FP8TFLOPS: 733, MemBWGBps: 864, SMs: 142, MemoryBytes: 48e9, L2Bytes: 96 * mib, Class: "high", MaxVGPU: 4, HostLinkGBps: 25,
		Price:   &Price{1.861, "AWS g6e.xlarge (1×L40S), us-east-1", "AWS EC2 On-Demand pricing", "2025-06"},
		Product: "NVIDIA L40S", KernelTable: "l40s", NearestMeasured: "L40S", StandIn: "A100"},
	// A100 SXM4 80 GB: 19.5 FP32, 156 TF32, 312 FP16, 2039 GB/s HBM2e, 108 SMs, 40 MB L2;
	// third-generation NVLink, 600 GB/s bidirectional.
	{Name: "A100", Arch: "ampere", FP32TFLOPS: 19.5, TF32TFLOPS: 156, FP16TFLOPS: 312, MemBWGBps: 2039, SMs: 108, MemoryBytes: 80 * gib, L2Bytes: 40 * mib, Class: "high", MaxVGPU: 4, HostLinkGBps: 25, NVLinkGBps: 300,
		Price:   &Price{2.25, "hyperscaler on-demand A100 80GB, midpoint of $1.50-3.00/GPU-h", "Mercatus cloud GPU pricing survey (mercatus-ai.com)", "2026-05"},
		Product: "NVIDIA A100-SXM4-80GB", KernelTable: "a100_sxm", NearestMeasured: "A100", StandIn: "L40S"},
	// H100 SXM5: 67 FP32, 495 TF32, 989 FP16, 1979 FP8, 3350 GB/s HBM3, 80 GB, 132 SMs, 50 MB L2;
	// fourth-generation NVLink, 900 GB/s bidirectional (450 one-way: llm-deploy-search.md §3).
	{Name: "H100", Arch: "hopper", FP32TFLOPS: 67, TF32TFLOPS: 495, FP16TFLOPS: 989, FP8TFLOPS: 1979, MemBWGBps: 3350, SMs: 132, MemoryBytes: 80 * gib, L2Bytes: 50 * mib, Class: "high", MaxVGPU: 4, HostLinkGBps: 50, NVLinkGBps: 450,
		Price:   &Price{6.88, "AWS p5.48xlarge (8×H100) $55.04/h ÷ 8, us-east-1, after AWS's June 2025 cut", "ecosystem-dropin.md §6 (AWS list price)", "2026-11"},
		Product: "NVIDIA H100 80GB HBM3", KernelTable: "h100_sxm", NearestMeasured: "H100", StandIn: "H200"},
	// H200 SXM: H100 compute with 141 GB HBM3e at 4800 GB/s.
	{Name: "H200", Arch: "hopper", FP32TFLOPS: 67, TF32TFLOPS: 495, FP16TFLOPS: 989, FP8TFLOPS: 1979, MemBWGBps: 4800, SMs: 132, MemoryBytes: 141 * gib, L2Bytes: 50 * mib, Class: "high", MaxVGPU: 4, HostLinkGBps: 50, NVLinkGBps: 450,
		Price: &Price{5.75, "hyperscaler on-demand H200 SXM, midpoint of $4.50-7.00/GPU-h", "Mercatus cloud GPU pricing survey (mercatus-ai.com)", "2026-05"},
		// NVML's name of the H200 SXM (NVIDIA/mig-parted#120 shows "NVIDIA H200").
		Product: "NVIDIA H200", KernelTable: "h200_sxm", NearestMeasured: "H100", StandIn: "H100"},
	// B200 (DGX B200 datasheet, per GPU): 2.25 PFLOPS dense FP16/BF16 (4.5 with sparsity),
	// 180 GB HBM3e at 8 TB/s, 148 SMs, 126 MB L2; fifth-generation NVLink, 1.8 TB/s
	// bidirectional; 80 TFLOPS FP32 and 1,100 TF32 dense; 4.5 PFLOPS FP8 and 9 FP4 dense.
	// No list price yet: a cluster gives price_per_hour.
	{Name: "B200", Arch: "blackwell", FP32TFLOPS: 80, TF32TFLOPS: 1100, FP16TFLOPS: 2250, FP8TFLOPS: 4500, FP4TFLOPS: 9000, MemBWGBps: 8000, SMs: 148, MemoryBytes: 180 * gib, L2Bytes: 126 * mib, Class: "high", MaxVGPU: 4, HostLinkGBps: 50, NVLinkGBps: 900,
		Product: "NVIDIA B200", KernelTable: "b200_sxm", NearestMeasured: "B200", StandIn: "H200"},
}

// Named is a GPU type plan knows by name only, without specs: a cluster file or a bundled
// profile may name it (with memory_bytes), a device may report it.
type Named struct {
	Name string
	// Product is its NVML product name ("" = none known: no built-in node label).
	Product string
	// LargeEngine: vLLM gives it the large-GPU batch defaults (LargeEngine).
	LargeEngine bool
}

// named are the GPU types beyond the specs: PARD's testbed GPU and DyOrc's (bundled
// profiles), the other data-centre parts nvidia-smi may report, and the large-memory parts
// vLLM's batch defaults name (GH200, AMD's MI300).
var named = []Named{
	{Name: "2080Ti", Product: "NVIDIA GeForce RTX 2080 Ti"},
	{Name: "A800", Product: "NVIDIA A800-SXM4-80GB"},
	{Name: "A30"}, {Name: "A40"}, {Name: "L40"}, {Name: "P100"}, {Name: "P40"},
	{Name: "GH200", LargeEngine: true}, {Name: "MI300", LargeEngine: true},
}

// aliases are other names of a catalogue type: the A10G is AWS's variant of the A10.
var aliases = map[string]string{"A10G": "A10"}

var (
	mu    sync.RWMutex
	extra []Spec // types Register added (tests)
)

func specs() []Spec {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Spec, 0, len(table)+len(extra))
	return append(append(out, table...), extra...)
}

// All returns every known GPU in table order (older and smaller first).
func All() []Spec { return specs() }

// Names lists the known GPU names in table order.
func Names() []string {
	all := specs()
	out := make([]string, len(all))
	for i, s := range all {
		out[i] = s.Name
	}
	return out
}

// Lookup finds a GPU by name, case-insensitively: a type's own name ("H100"), an alias of
// it ("A10G"), or the product name the driver reports for it, as nvidia-smi prints it
// ("NVIDIA H100 80GB HBM3"; spaces, hyphens and the "NVIDIA" or "Tesla" prefix optional).
// A name that only contains a type's name ("A100-40GB", "H100 PCIe") is another part of
// that family, whose memory or bandwidth may differ: it is refused, naming the type the
// catalogue holds.
func Lookup(name string) (Spec, error) {
	if s, ok := find(func(s *Spec) bool { return strings.EqualFold(s.Name, name) }); ok {
		return s, nil
	}
	key := productKey(name)
	for a, to := range aliases {
		if key != "" && key == productKey(a) {
			if s, ok := Find(to); ok {
				return s, nil
			}
		}
	}
	if s, ok := find(func(s *Spec) bool { return key != "" && s.Product != "" && productKey(s.Product) == key }); ok {
		return s, nil
	}
	names := Names()
	sort.Strings(names)
	if s, ok := familyOf(name); ok {
		return Spec{}, fmt.Errorf("GPU %q: not the catalogue's %s, which is the %s (%.0f GB, %.0f GB/s): give %s if it is that GPU; known GPUs: %s",
			name, s.Name, s.Product, float64(s.MemoryBytes)/(1<<30), s.MemBWGBps, s.Name, strings.Join(names, ", "))
	}
	return Spec{}, fmt.Errorf("GPU %q: unknown; known GPUs: %s", name, strings.Join(names, ", "))
}

// productKey is a GPU name as Lookup compares product names: lower case, without the
// "NVIDIA" or "Tesla" prefix, spaces, hyphens and underscores.
func productKey(name string) string {
	k := strings.ToLower(strings.TrimSpace(name))
	for _, p := range []string{"nvidia", "tesla"} {
		k = strings.TrimPrefix(k, p)
	}
	return strings.NewReplacer(" ", "", "-", "", "_", "").Replace(k)
}

// familyOf is the catalogue type whose name a longer name contains as a whole word
// ("A100" in "A100-40GB"; L40S before L40 and L4).
func familyOf(name string) (Spec, bool) {
	words := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
	var best Spec
	for _, s := range specs() {
		for _, w := range words {
			if w == strings.ToLower(s.Name) && len(s.Name) > len(best.Name) {
				best = s
			}
		}
	}
	return best, best.Name != ""
}

// Find is Lookup by exact name, without the error.
func Find(name string) (Spec, bool) {
	return find(func(s *Spec) bool { return s.Name == name })
}

// find is the first entry that match accepts, without copying the table (planners look
// types up in their inner loops).
func find(match func(*Spec) bool) (Spec, bool) {
	for i := range table {
		if match(&table[i]) {
			return table[i], true
		}
	}
	mu.RLock()
	defer mu.RUnlock()
	for i := range extra {
		if match(&extra[i]) {
			return extra[i], true
		}
	}
	return Spec{}, false
}

// Register adds a GPU type for the rest of the process (a test's type, seen by every table
// that looks types up here); remove takes it out again. The entry must pass Check and be
// new.
func Register(s Spec) (remove func(), err error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	if _, ok := Find(s.Name); ok {
		return nil, fmt.Errorf("GPU %s: already in the catalogue", s.Name)
	}
	mu.Lock()
	extra = append(extra, s)
	mu.Unlock()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		for i := range extra {
			if extra[i].Name == s.Name {
				extra = append(extra[:i:i], extra[i+1:]...)
				return
			}
		}
	}, nil
}

// NamedTypes lists the types known by name only.
func NamedTypes() []Named { return append([]Named(nil), named...) }

// Product is the NVML product name of a GPU type: a catalogue type's or a named type's.
func Product(name string) (string, bool) {
	if s, ok := Find(name); ok {
		return s.Product, true
	}
	for _, n := range named {
		if n.Name == name && n.Product != "" {
			return n.Product, true
		}
	}
	return "", false
}

// Canonical is the catalogue or named type a name stands for, matched case-insensitively
// and through aliases (A10G → A10); "" if none.
func Canonical(name string) string {
	for a, to := range aliases {
		if strings.EqualFold(a, name) {
			return to
		}
	}
	for _, n := range allNames() {
		if strings.EqualFold(n, name) {
			return n
		}
	}
	return ""
}

// AllNames lists every name a type may go by — catalogue types, named types and aliases —
// longest first (so that a scan for one in a longer string tries L40S before L40 and L4).
func AllNames() []string {
	out := allNames()
	for a := range aliases {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i]) != len(out[j]) {
			return len(out[i]) > len(out[j])
		}
		return out[i] < out[j]
	})
	return out
}

func allNames() []string {
	out := Names()
	for _, n := range named {
		out = append(out, n.Name)
	}
	return out
}

// DefaultPrecision is the mode a TF32-enabled build (PPipe's TensorRT engines) uses: TF32
// tensor cores where the GPU has them, FP32 cores otherwise.
func (s Spec) DefaultPrecision() Precision {
	if s.TF32TFLOPS > 0 {
		return TF32
	}
	return FP32
}

// PeakTFLOPS is the dense peak in a precision; TF32 falls back to FP32 on GPUs without it.
func (s Spec) PeakTFLOPS(p Precision) float64 {
	switch p {
	case FP16:
		return s.FP16TFLOPS
	case TF32:
		if s.TF32TFLOPS > 0 {
			return s.TF32TFLOPS
		}
	}
	return s.FP32TFLOPS
}

// Measured reports whether the GPU has measured kernel tables.
func (s Spec) Measured() bool { return s.KernelTable != "" }
