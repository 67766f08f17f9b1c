package cascade

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
)

// Family is a stand-in model family (ours: the paper's per-sample outputs are not public):
// per-model single-model accuracies (the paper's), the latency curve lat(b) = BaseMs + PerMs·b
// (b ≥ 1), memory per GPU part, the task's number of options and the generator's noise.
type Family struct {
	Name    string
	Options int // 2: binary (|2σ(κe)−1| certainty); 4: four-way (top-2 softmax gap)
	Models  []StandinModel
	// Sigma is the per-model evidence noise σ, Kappa the certainty sharpness κ.
	Sigma, Kappa float64
	// GPU and GPUMem describe the stand-in GPU (V100-32GB, CascadeServe §6.2).
	GPU    string
	GPUMem int64
	// MaxBatch is the largest profiled batch (artifact: 100).
	MaxBatch int
}

// StandinModel is one model of a family.
type StandinModel struct {
	Name     string
	Accuracy float64
	BaseMs   float64
	PerMs    float64
	// Parts is the memory per GPU the model spans (one entry = a single-GPU model).
	Parts []int64
}

// Calibration targets (the paper's §6.1 accuracies and the authors' artifact's V100
// profiles). BERT: latency ≈ flat for the small models,
// Base ≈ 7.5 ms + 0.92 ms·b; Llama: no batching benefit (lat(b) = b × per-sample), 70B
// holding 2 GPUs for ≈1.84 s per sample (four scored endings).
var (
	BERT = Family{Name: "bert", Options: 2, Sigma: 0.35, Kappa: 2.5, GPU: "V100", GPUMem: 32_500_000_000, MaxBatch: 100,
		Models: []StandinModel{
			{"bert-tiny", 0.810, 1.64, 0.0003, []int64{17_600_000}},
			{"bert-mini", 0.824, 2.78, 0.0008, []int64{44_700_000}},
			{"bert-small", 0.835, 2.82, 0.0009, []int64{115_000_000}},
			{"bert-medium", 0.8365, 5.05, 0.003, []int64{166_000_000}},
			{"bert-base", 0.8486, 7.5, 0.92, []int64{438_000_000}},
		}}
	Llama = Family{Name: "llama", Options: 4, Sigma: 0.25, Kappa: 2.0, GPU: "V100", GPUMem: 32_500_000_000, MaxBatch: 100,
		Models: []StandinModel{
			{"openllama-3b", 0.520, 0, 123, []int64{2_600_000_000}},
			{"llama-2-7b", 0.528, 0, 212, []int64{4_700_000_000}},
			{"llama-2-13b", 0.612, 0, 382, []int64{8_500_000_000}},
			{"llama-2-70b", 0.647, 0, 1840, []int64{17_200_000_000, 17_700_000_000}},
		}}
)

// Families are the stand-in families by name.
var Families = map[string]Family{"bert": BERT, "llama": Llama}

// Generate draws n validation samples of the family's models from the seeded
// latent-difficulty model (ours): difficulty d_s ~ N(0,1); evidence
// e = a_m − d_s + σ·ε_{s,m}; a model is right iff e > 0, so P(right) = Φ(a_m/√(1+σ²)) and
// a_m = Φ⁻¹(acc_m)·√(1+σ²) hits the target accuracy in expectation. Certainty grows with
// |e|: binary |2σ(κe)−1|; four-way the gap between the two best softmax scores of
// [κ|e|, noise, noise, noise]. A shared difficulty makes cheap and expensive models agree
// mostly, and independent noise lets a confident cheap model be right where the big one
// is wrong, which is what lets a cascade beat its top model.
func (f Family) Generate(n int, seed uint64) []cascadesec.ValidationRecord {
	rng := rand.New(rand.NewPCG(seed, 0x63617363))
	opts := max(f.Options, 2)
	M := len(f.Models)
	// Draw difficulty, noise, labels and option noise first; then set each a_m to the
	// (1−acc_m) quantile of d_s − σ·ε_{s,m}, so the drawn set hits the target accuracy
	// exactly (the closed form Φ⁻¹(acc)·√(1+σ²) only holds in expectation, and a shared
	// difficulty shifts every model together).
	d := make([]float64, n)
	label := make([]int, n)
	eps := make([][]float64, M)
	for m := range eps {
		eps[m] = make([]float64, n)
	}
	for s := 0; s < n; s++ {
		d[s] = rng.NormFloat64()
		label[s] = rng.IntN(opts)
		for m := 0; m < M; m++ {
			eps[m][s] = rng.NormFloat64()
		}
	}
	a := make([]float64, M)
	for m, sm := range f.Models {
		x := make([]float64, n)
		for s := range x {
			x[s] = d[s] - f.Sigma*eps[m][s]
		}
		sort.Float64s(x)
		// right iff a > x_s: exactly round(acc·n) samples
		k := int(math.Round(sm.Accuracy * float64(n)))
		switch {
		case k <= 0:
			a[m] = x[0] - 1
		case k >= n:
			a[m] = x[n-1] + 1
		default:
			a[m] = (x[k-1] + x[k]) / 2
		}
	}
	out := make([]cascadesec.ValidationRecord, 0, n*M)
	for s := 0; s < n; s++ {
		for m, sm := range f.Models {
			e := a[m] - d[s] + f.Sigma*eps[m][s]
			var cert float64
			if opts == 2 {
				cert = math.Abs(2/(1+math.Exp(-f.Kappa*e)) - 1)
			} else {
				// [ours] a wrong pick on a four-way task wins by a smaller margin than a
				// right one (0.5×): confident mistakes are rarer than confident answers.
				lead := f.Kappa * e
				if e <= 0 {
					lead = -0.5 * f.Kappa * e
				}
				z := []float64{lead}
				for o := 1; o < opts; o++ {
					z = append(z, 0.3*rng.NormFloat64())
				}
				cert = top2Gap(z)
			}
			pred := label[s]
			if e <= 0 {
				pred = (label[s] + 1 + rng.IntN(opts-1)) % opts
			}
			cert = math.Round(cert*1e6) / 1e6
			out = append(out, cascadesec.ValidationRecord{Sample: s, Model: sm.Name, Pred: strconv.Itoa(pred), Cert: cert, Label: strconv.Itoa(label[s])})
		}
	}
	return out
}

func top2Gap(z []float64) float64 {
	mx := math.Inf(-1)
	for _, v := range z {
		mx = max(mx, v)
	}
	var sum float64
	p := make([]float64, len(z))
	for i, v := range z {
		p[i] = math.Exp(v - mx)
		sum += p[i]
	}
	a, b := 0.0, 0.0
	for _, v := range p {
		v /= sum
		if v > a {
			a, b = v, a
		} else if v > b {
			b = v
		}
	}
	return a - b
}

// Profile returns the family's stand-in profile: lat(b) for b = 1..MaxBatch on the
// family's GPU, memory (and parts for multi-GPU models).
func (f Family) Profile() *formats.Profile {
	p := &formats.Profile{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindProfile},
		Metadata: formats.Metadata{Name: f.Name + "-standins", Description: "CascadeServe stand-in profiles (spec §7.1): lat(b) = base + per·b on V100-32GB"}}
	for _, m := range f.Models {
		var mem int64
		for _, x := range m.Parts {
			mem += x
		}
		mp := formats.ModelProfile{Name: m.Name, Backend: "import", Source: fmt.Sprintf("stand-in: %.4g + %.4g·b ms", m.BaseMs, m.PerMs),
			MemoryBytes: mem, Blocks: []formats.Block{{FirstLayer: 0, EndLayer: 1}}, CutBytes: []int64{}}
		if len(m.Parts) > 1 {
			mp.PartsMemoryBytes = append([]int64(nil), m.Parts...)
		}
		for b := 1; b <= f.MaxBatch; b++ {
			us := math.Round((m.BaseMs + m.PerMs*float64(b)) * 1000)
			mp.Latency = append(mp.Latency, formats.LatencyEntry{GPU: f.GPU, VGPU: 1, Batch: b, BlockUs: []float64{us}})
		}
		p.Models = append(p.Models, mp)
	}
	return p
}

// Cluster returns a cluster of n stand-in GPUs, perServer to a server (paper: 8 × 2 V100).
func (f Family) Cluster(n, perServer int) *formats.Cluster {
	return &formats.Cluster{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindCluster},
		Metadata: formats.Metadata{Name: fmt.Sprintf("%s-%dx%s", f.Name, n, f.GPU)},
		GPUs:     []formats.GPUPool{{Type: f.GPU, Count: n, PerServer: perServer, MemoryBytes: f.GPUMem}}, NICGbps: 10}
}

// Names lists the family's model names.
func (f Family) Names() []string {
	var out []string
	for _, m := range f.Models {
		out = append(out, m.Name)
	}
	return out
}
