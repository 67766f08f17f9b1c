package roofline

// Params are the per-GPU constants of the roofline model.
type Params struct {
	// EtaCompute is the achieved share of peak arithmetic on large layers; EtaMem that of
	// DRAM bandwidth.
	EtaCompute, EtaMem float64
	// EtaSmall and HalfWorkFLOPs model tensor-core GEMM efficiency growing with the size
	// of the product: a layer doing w FLOPs per sample reaches
	// EtaSmall + (EtaCompute−EtaSmall)·w/(w+HalfWorkFLOPs). HalfWorkFLOPs = 0 means a flat
	// EtaCompute (CUDA-core FP32 GPUs).
	EtaSmall, HalfWorkFLOPs float64
	// PhiFLOPs is the work per SM (FLOPs) at which a kernel fills the GPU; below
	// SMs·PhiFLOPs the kernel runs at the rate of a partly filled GPU.
	PhiFLOPs float64
	// OverheadUs is the fixed cost per launched kernel (launch + tail), µs.
	OverheadUs float64
	// L2Boost is the bandwidth of L2-resident traffic relative to DRAM.
	L2Boost float64
	// Kappa[v-1] is the slice interference factor κ_v: a 1/v slice takes v·κ_v × the
	// whole-GPU time (κ_1 = 1).
	Kappa [4]float64
}

// calibrated holds the fitted constants. See CALIBRATION.md for the targets and the
// remaining error per target.
var calibrated = map[string]Params{
	"P4":   {EtaCompute: 0.80, EtaMem: 0.80, PhiFLOPs: 1e6, OverheadUs: 10, L2Boost: 1.5, Kappa: [4]float64{1, 1, 1, 1}},
	"T4":   {EtaCompute: 0.70, EtaMem: 0.60, PhiFLOPs: 1e6, OverheadUs: 8, L2Boost: 1.5, Kappa: [4]float64{1, 0.97, 1.02, 1.04}},
	"L4":   {EtaCompute: 0.65, EtaSmall: 0.12, HalfWorkFLOPs: 8e9, EtaMem: 0.80, PhiFLOPs: 0.6e6, OverheadUs: 5, L2Boost: 2, Kappa: [4]float64{1, 0.97, 1.02, 1.04}},
	"V100": {EtaCompute: 0.85, EtaMem: 0.85, PhiFLOPs: 0.8e6, OverheadUs: 5, L2Boost: 1.5, Kappa: [4]float64{1, 0.87, 0.82, 0.83}},
	// No targets exist for these. A10 takes L4's constants (same tensor-core generation
	// family, TF32); A100/H100/H200 use TF32 tensor cores whose efficiency needs larger
	// layers to ramp up (bigger GPUs), V100-like slicing, and HBM at 80%.
	"A10":  {EtaCompute: 0.65, EtaSmall: 0.12, HalfWorkFLOPs: 8e9, EtaMem: 0.80, PhiFLOPs: 0.6e6, OverheadUs: 5, L2Boost: 2, Kappa: [4]float64{1, 0.97, 1.02, 1.04}},
	"A100": {EtaCompute: 0.50, EtaSmall: 0.15, HalfWorkFLOPs: 4e9, EtaMem: 0.80, PhiFLOPs: 2e6, OverheadUs: 5, L2Boost: 2, Kappa: [4]float64{1, 0.87, 0.82, 0.83}},
	"H100": {EtaCompute: 0.45, EtaSmall: 0.12, HalfWorkFLOPs: 6e9, EtaMem: 0.80, PhiFLOPs: 2e6, OverheadUs: 4, L2Boost: 2, Kappa: [4]float64{1, 0.87, 0.82, 0.83}},
	"H200": {EtaCompute: 0.45, EtaSmall: 0.12, HalfWorkFLOPs: 6e9, EtaMem: 0.80, PhiFLOPs: 2e6, OverheadUs: 4, L2Boost: 2, Kappa: [4]float64{1, 0.87, 0.82, 0.83}},
}

// Eta is the compute efficiency of a layer doing work FLOPs.
func (p Params) Eta(work float64) float64 {
	if p.HalfWorkFLOPs <= 0 {
		return p.EtaCompute
	}
	return p.EtaSmall + (p.EtaCompute-p.EtaSmall)*work/(work+p.HalfWorkFLOPs)
}

// ParamsFor returns the calibrated constants of a GPU type (generic ones for an unknown type).
func ParamsFor(gpu string) Params {
	if p, ok := calibrated[gpu]; ok {
		return p
	}
	return Params{EtaCompute: 0.5, EtaMem: 0.75, PhiFLOPs: 4e6, OverheadUs: 6, L2Boost: 1.5, Kappa: [4]float64{1, 1, 1, 1}}
}
