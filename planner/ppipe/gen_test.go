package ppipe

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/plan-dev/plan/formats"
)

// gpuSpec drives the synthetic profiles: latency ratio to L4 (range per block) and the
// slice/batch grid the authors profiled (facts from the authors' artifact's published block
// tables).
type gpuSpec struct {
	name           string
	ratioLo, ratio float64 // per-block ratio to L4 is drawn in [ratioLo, ratio]
	levels         []int
	class          string
	perServer      int
}

var (
	specL4   = gpuSpec{"L4", 1, 1, []int{1, 2, 3, 4}, "high", 1}
	specP4   = gpuSpec{"P4", 1.8, 8.6, []int{1}, "low", 1}
	specT4   = gpuSpec{"T4", 1.1, 6.0, []int{1, 2, 3, 4}, "low", 2}
	specV100 = gpuSpec{"V100", 0.31, 3.2, []int{1, 2, 3, 4}, "high", 2}
)

// maxBatch is the authors' grid: v=1: b=1..8; v=2: 1..4; v=3,4: 1..2.
func maxBatch(v, cap int) int {
	b := map[int]int{1: 8, 2: 4, 3: 2, 4: 2}[v]
	if cap > 0 && b > cap {
		b = cap
	}
	return b
}

// genModel makes a synthetic model profile with M blocks: L4 block-sum latency 5–35 ms,
// per-block ratios to L4 per GPU type, batch scaling lat(8)/lat(1) ≈ 6–8, slices ≈ v× slower,
// cut sizes 0.2–17 MB. Deterministic for a seed.
func genModel(seed uint64, name string, M int, gpus []gpuSpec, batchCap int) formats.ModelProfile {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	total := 5000 + r.Float64()*30000
	base := make([]float64, M)
	sum := 0.0
	for q := range base {
		base[q] = 0.5 + r.Float64()
		sum += base[q]
	}
	for q := range base {
		base[q] *= total / sum
	}
	mp := formats.ModelProfile{Name: name, Backend: "roofline", Blocks: make([]formats.Block, M), CutBytes: make([]int64, M-1)}
	for q := range mp.Blocks {
		mp.Blocks[q] = formats.Block{FirstLayer: q, EndLayer: q + 1}
	}
	for c := range mp.CutBytes {
		mp.CutBytes[c] = int64(200e3 + r.Float64()*r.Float64()*17e6)
	}
	for _, g := range gpus {
		// Ratio trend across blocks: early blocks near ratioLo, late ones near ratio (or reverse).
		lo, hi := g.ratioLo, g.ratio
		if r.IntN(2) == 0 {
			lo, hi = hi, lo
		}
		ratios := make([]float64, M)
		for q := range ratios {
			f := float64(q) / float64(max(M-1, 1))
			ratios[q] = math.Max(0.2, (lo+(hi-lo)*f)*(0.85+0.3*r.Float64()))
		}
		slope := 0.7 + 0.3*r.Float64()
		for _, v := range g.levels {
			for b := 1; b <= maxBatch(v, batchCap); b++ {
				e := formats.LatencyEntry{GPU: g.name, VGPU: v, Batch: b, BlockUs: make([]float64, M)}
				for q := range e.BlockUs {
					l := base[q] * ratios[q] * (1 + slope*float64(b-1)) * float64(v) * (0.97 + 0.06*r.Float64())
					e.BlockUs[q] = math.Round(l*10) / 10
				}
				mp.Latency = append(mp.Latency, e)
			}
		}
	}
	return mp
}

func genProfile(seed uint64, models int, M int, gpus []gpuSpec, batchCap int) *formats.Profile {
	p := &formats.Profile{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindProfile}}
	for i := range models {
		p.Models = append(p.Models, genModel(seed*131+uint64(i), fmt.Sprintf("m%d", i), M, gpus, batchCap))
	}
	return p
}

func genCluster(gpus []gpuSpec, counts []int, nicGbps float64) *formats.Cluster {
	c := &formats.Cluster{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindCluster}, NICGbps: nicGbps, NICDerate: 5}
	for i, g := range gpus {
		c.GPUs = append(c.GPUs, formats.GPUPool{Type: g.name, Count: counts[i], PerServer: g.perServer, VGPU: g.levels, Class: g.class})
	}
	return c
}
