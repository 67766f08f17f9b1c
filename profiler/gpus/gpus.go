// Package gpus is the table of GPU types the roofline backend and the LLM estimator know:
// peak arithmetic rates, memory bandwidth and size, SM count and L2 size, from the vendors'
// public datasheets (dense rates, no structured sparsity; boost clocks).
package gpus

import (
	"fmt"
	"sort"
	"strings"
)

// Precision names an arithmetic mode.
type Precision string

// Precisions the table carries peak rates for.
const (
	FP32 Precision = "fp32"
	TF32 Precision = "tf32"
	FP16 Precision = "fp16"
)

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
	MemBWGBps   float64
	SMs         int
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
}

const (
	gib = int64(1) << 30
	mib = int64(1) << 20
)

var table = []Spec{
	// Tesla P4 datasheet: 5.5 TFLOPS FP32, 192 GB/s GDDR5, 8 GB, 20 SMs (GP104), 2 MB L2.
	// Pascal GP104 runs FP16 at 1/64 rate.
	{Name: "P4", Arch: "pascal", FP32TFLOPS: 5.5, FP16TFLOPS: 0.09, MemBWGBps: 192, SMs: 20, MemoryBytes: 8 * gib, L2Bytes: 2 * mib, Class: "low", MaxVGPU: 1, HostLinkGBps: 12},
	// T4: 8.1 FP32, 65 FP16 tensor, 320 GB/s GDDR6, 16 GB, 40 SMs, 4 MB L2.
	{Name: "T4", Arch: "turing", FP32TFLOPS: 8.1, FP16TFLOPS: 65, MemBWGBps: 320, SMs: 40, MemoryBytes: 16 * gib, L2Bytes: 4 * mib, Class: "low", MaxVGPU: 4, HostLinkGBps: 12},
	// L4: 30.3 FP32, 60 TF32 (120 with sparsity), 121 FP16, 242.5 FP8, 300 GB/s, 24 GB, 58 SMs, 48 MB L2.
	{Name: "L4", Arch: "ada", FP32TFLOPS: 30.3, TF32TFLOPS: 60, FP16TFLOPS: 121, FP8TFLOPS: 242.5, MemBWGBps: 300, SMs: 58, MemoryBytes: 24 * gib, L2Bytes: 48 * mib, Class: "high", MaxVGPU: 4, HostLinkGBps: 25},
	// A10: 31.2 FP32, 62.5 TF32, 125 FP16, 600 GB/s, 24 GB, 72 SMs, 6 MB L2.
	{Name: "A10", Arch: "ampere", FP32TFLOPS: 31.2, TF32TFLOPS: 62.5, FP16TFLOPS: 125, MemBWGBps: 600, SMs: 72, MemoryBytes: 24 * gib, L2Bytes: 6 * mib, Class: "high", MaxVGPU: 4, HostLinkGBps: 25},
	// V100 SXM2: 15.7 FP32, 125 FP16 tensor, 900 GB/s HBM2, 16 GB, 80 SMs, 6 MB L2;
	// second-generation NVLink, 300 GB/s bidirectional.
	{Name: "V100", Arch: "volta", FP32TFLOPS: 15.7, FP16TFLOPS: 125, MemBWGBps: 900, SMs: 80, MemoryBytes: 16 * gib, L2Bytes: 6 * mib, Class: "high", MaxVGPU: 4, HostLinkGBps: 12, NVLinkGBps: 150},
	// L40S (NVIDIA L40S datasheet): 91.6 FP32, 183 TF32, 362 FP16/BF16 and 733 FP8 tensor dense
	// (twice each with sparsity), 864 GB/s GDDR6, 48 GB, 142 SMs (AD102), 96 MB L2; PCIe Gen4 x16,
	// no NVLink (tensor-parallel collectives run over PCIe).
	{Name: "L40S", Arch: "ada", FP32TFLOPS: 91.6, TF32TFLOPS: 183, FP16TFLOPS: 362, FP8TFLOPS: 733, MemBWGBps: 864, SMs: 142, MemoryBytes: 48e9, L2Bytes: 96 * mib, Class: "high", MaxVGPU: 4, HostLinkGBps: 25},
	// A100 SXM4 80 GB: 19.5 FP32, 156 TF32, 312 FP16, 2039 GB/s HBM2e, 108 SMs, 40 MB L2;
	// third-generation NVLink, 600 GB/s bidirectional.
	{Name: "A100", Arch: "ampere", FP32TFLOPS: 19.5, TF32TFLOPS: 156, FP16TFLOPS: 312, MemBWGBps: 2039, SMs: 108, MemoryBytes: 80 * gib, L2Bytes: 40 * mib, Class: "high", MaxVGPU: 4, HostLinkGBps: 25, NVLinkGBps: 300},
	// H100 SXM5: 67 FP32, 495 TF32, 989 FP16, 1979 FP8, 3350 GB/s HBM3, 80 GB, 132 SMs, 50 MB L2;
	// fourth-generation NVLink, 900 GB/s bidirectional (450 one-way: llm-deploy-search.md §3).
	{Name: "H100", Arch: "hopper", FP32TFLOPS: 67, TF32TFLOPS: 495, FP16TFLOPS: 989, FP8TFLOPS: 1979, MemBWGBps: 3350, SMs: 132, MemoryBytes: 80 * gib, L2Bytes: 50 * mib, Class: "high", MaxVGPU: 4, HostLinkGBps: 50, NVLinkGBps: 450},
	// H200 SXM: H100 compute with 141 GB HBM3e at 4800 GB/s.
	{Name: "H200", Arch: "hopper", FP32TFLOPS: 67, TF32TFLOPS: 495, FP16TFLOPS: 989, FP8TFLOPS: 1979, MemBWGBps: 4800, SMs: 132, MemoryBytes: 141e9, L2Bytes: 50 * mib, Class: "high", MaxVGPU: 4, HostLinkGBps: 50, NVLinkGBps: 450},
	// B200 (DGX B200 datasheet, per GPU): 2.25 PFLOPS dense FP16/BF16 (4.5 with sparsity),
	// 180 GB HBM3e at 8 TB/s, 148 SMs, 126 MB L2; fifth-generation NVLink, 1.8 TB/s
	// bidirectional; 80 TFLOPS FP32 and 1,100 TF32 dense; 4.5 PFLOPS FP8 and 9 FP4 dense.
	{Name: "B200", Arch: "blackwell", FP32TFLOPS: 80, TF32TFLOPS: 1100, FP16TFLOPS: 2250, FP8TFLOPS: 4500, FP4TFLOPS: 9000, MemBWGBps: 8000, SMs: 148, MemoryBytes: 180e9, L2Bytes: 126 * mib, Class: "high", MaxVGPU: 4, HostLinkGBps: 50, NVLinkGBps: 900},
}

// All returns every known GPU in table order (older and smaller first).
func All() []Spec { return append([]Spec(nil), table...) }

// Names lists the known GPU names in table order.
func Names() []string {
	out := make([]string, len(table))
	for i, s := range table {
		out[i] = s.Name
	}
	return out
}

// Lookup finds a GPU by name, case-insensitively.
func Lookup(name string) (Spec, error) {
	for _, s := range table {
		if strings.EqualFold(s.Name, name) {
			return s, nil
		}
	}
	names := Names()
	sort.Strings(names)
	return Spec{}, fmt.Errorf("GPU %q: unknown; known GPUs: %s", name, strings.Join(names, ", "))
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
