package ppipe

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
	"github.com/plan-dev/plan/planner"
)

// gpuType is one GPU type of the cluster that has GPUs.
type gpuType struct {
	name      string
	class     string
	count     int
	perServer int
	levels    []int // allowed vGPU levels (cluster's list)
}

// modelData is everything the formulation needs about one served model, in µs and req/s.
type modelData struct {
	name   string // workload name
	prof   *formats.ModelProfile
	weight float64
	slo    time.Duration
	budget float64 // T' in µs
	blocks int     // M
	tau    []float64
	// pre[key(k,v,b)] are prefix sums of clamped block latencies: C(i,j) = pre[j]-pre[i].
	pre map[lkey][]float64
	// batches[k][v] lists profiled batch sizes, ascending.
	batches map[int]map[int][]int
	// lambda is λ̂ (req/µs) for the batch-formation allowance; 0 disables β.
	lambda float64
	betaOn bool
	// rate is the workload's rate_rps (req/s; 0 = not given), λ̂'s default for β.
	rate float64
}

type lkey struct{ k, v, b int }

// problem is a validated instance: GPU types with GPUs, models, and options.
type problem struct {
	types  []gpuType
	models []*modelData
	bw     float64 // effective NIC bandwidth, bit/µs
	opts   Options
	// embedded are the canonical inputs recorded in the plan.
	embedded formats.EmbeddedInputs
	cluster  *formats.Cluster
}

// prepare validates the inputs against each other and resolves every default.
func prepare(in Inputs, opts Options) (*problem, error) {
	var probs []string
	add := func(f string, a ...any) { probs = append(probs, fmt.Sprintf(f, a...)) }
	if in.Cluster == nil {
		return nil, &InputError{Problems: []string{"cluster: missing"}}
	}
	if len(in.Profiles) == 0 {
		return nil, &InputError{Problems: []string{"profile: no profile given"}}
	}
	p := &problem{opts: opts, bw: in.Cluster.EffectiveNICMbps(), cluster: in.Cluster}
	total := 0
	for _, g := range in.Cluster.GPUs {
		if g.Count <= 0 {
			continue
		}
		total += g.Count
		ps := g.PerServer
		if ps < 1 {
			ps = 1
		}
		p.types = append(p.types, gpuType{name: g.Type, class: g.Class, count: g.Count, perServer: ps, levels: slices.Clone(g.Levels())})
	}
	if total == 0 {
		add("cluster: gpus: every count is 0: need at least one GPU")
	}
	if !(p.bw > 0) {
		add("cluster: nic_gbps: %g: must be > 0", in.Cluster.NICGbps)
	}
	// Index models of all profiles by name.
	byName := map[string]*formats.ModelProfile{}
	var order []string
	for pi, pr := range in.Profiles {
		for mi := range pr.Models {
			m := &pr.Models[mi]
			if _, dup := byName[m.Name]; dup {
				add("profile[%d]: models[%d].name: %q: model appears in more than one profile", pi, mi, m.Name)
				continue
			}
			byName[m.Name] = m
			order = append(order, m.Name)
		}
	}
	// Effective workload: explicit, or every profiled model with weight 1.
	var wl []ppipesec.ModelWorkload
	if in.Workload != nil && len(ppipesec.ModelsOf(in.Workload)) > 0 {
		wl = slices.Clone(ppipesec.ModelsOf(in.Workload))
	} else {
		for _, n := range order {
			wl = append(wl, ppipesec.ModelWorkload{Name: n})
		}
	}
	if len(wl) == 0 {
		add("workload: models: no model to serve (the profiles hold no DNN models)")
	}
	seen := map[string]bool{}
	used := map[string]bool{}
	for i := range wl {
		w := &wl[i]
		path := fmt.Sprintf("workload: models[%d]", i)
		if seen[w.Name] {
			add("%s.name: %q: duplicate model", path, w.Name)
			continue
		}
		seen[w.Name] = true
		mp, ok := byName[w.ProfileName()]
		if !ok {
			add("%s.name: %q: unknown model: not in any profile (profiled: %s)", path, w.ProfileName(), listOrNone(order))
			continue
		}
		used[mp.Name] = true
		if w.Weight == 0 {
			w.Weight = 1
		}
		if !(w.Weight > 0) || math.IsInf(w.Weight, 0) {
			add("%s.weight: %g: must be > 0", path, w.Weight)
			continue
		}
		md, errs := newModelData(w, mp, p, opts)
		probs = append(probs, errs...)
		if md == nil {
			continue
		}
		w.SLO = formats.Duration(md.slo)
		w.SLOScale = 0
		p.models = append(p.models, md)
	}
	if len(probs) > 0 {
		return nil, &InputError{Problems: probs}
	}
	// Canonical embedded inputs: used models only, without the layer lists (the planner never
	// reads them and they dominate a profile's size).
	vals := make([]formats.Profile, len(in.Profiles))
	for i, pr := range in.Profiles {
		vals[i] = *pr
	}
	profs := planner.EmbedProfiles(vals, func(m string) bool { return used[m] })
	wdoc := ppipesec.SetModels(&formats.Workload{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindWorkload}}, wl)
	if in.Workload != nil {
		wdoc.Metadata = in.Workload.Metadata
	}
	p.embedded = formats.EmbeddedInputs{Profiles: profs, Cluster: in.Cluster, Workload: wdoc}
	return p, nil
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	c := slices.Clone(s)
	sort.Strings(c)
	out := ""
	for i, x := range c {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}

func newModelData(w *ppipesec.ModelWorkload, mp *formats.ModelProfile, p *problem, opts Options) (*modelData, []string) {
	var probs []string
	add := func(f string, a ...any) { probs = append(probs, fmt.Sprintf(f, a...)) }
	M := len(mp.Blocks)
	if M == 0 {
		add("profile: model %s: blocks: empty: the planner needs block latencies", mp.Name)
		return nil, probs
	}
	if len(mp.CutBytes) != M-1 {
		add("profile: model %s: cut_bytes: has %d entries: must have len(blocks)-1 = %d", mp.Name, len(mp.CutBytes), M-1)
		return nil, probs
	}
	md := &modelData{name: w.Name, prof: mp, weight: w.Weight, rate: w.RateRPS, blocks: M, pre: map[lkey][]float64{}, batches: map[int]map[int][]int{}}
	md.tau = make([]float64, M+1)
	for c := 1; c < M; c++ {
		if mp.CutBytes[c-1] < 0 {
			add("profile: model %s: cut_bytes[%d]: %d: must be >= 0", mp.Name, c-1, mp.CutBytes[c-1])
		}
		md.tau[c] = 8 * float64(mp.CutBytes[c-1]) / p.bw
	}
	for k, t := range p.types {
		md.batches[k] = map[int][]int{}
		found := false
		for _, e := range mp.Latency {
			if e.GPU != t.name {
				continue
			}
			found = true
			if len(e.BlockUs) != M {
				add("profile: model %s: latency[gpu=%s vgpu=%d batch=%d].block_us: %d entries: must have %d (one per block)", mp.Name, e.GPU, e.VGPU, e.Batch, len(e.BlockUs), M)
				continue
			}
			if !slices.Contains(t.levels, e.VGPU) || e.Batch < 1 {
				continue
			}
			key := lkey{k, e.VGPU, e.Batch}
			if _, dup := md.pre[key]; dup {
				add("profile: model %s: latency: gpu %s vgpu %d batch %d: duplicate entry", mp.Name, e.GPU, e.VGPU, e.Batch)
				continue
			}
			pre := make([]float64, M+1)
			bad := false
			for q, l := range e.BlockUs {
				if math.IsNaN(l) || math.IsInf(l, 0) || l < 0 {
					bad = true
				}
				pre[q+1] = pre[q] + math.Max(l, 1) // clamp to ≥ 1 µs, as the authors' artifact does
			}
			if bad {
				add("profile: model %s: latency[gpu=%s vgpu=%d batch=%d].block_us: must be finite and >= 0", mp.Name, e.GPU, e.VGPU, e.Batch)
				continue
			}
			md.pre[key] = pre
			md.batches[k][e.VGPU] = append(md.batches[k][e.VGPU], e.Batch)
		}
		if !found {
			add("profile: model %s: no latency for GPU type %s, which the cluster has %d of (profile it, or set its count to 0)", mp.Name, t.name, t.count)
		}
		for v := range md.batches[k] {
			slices.Sort(md.batches[k][v])
		}
	}
	// SLO: --slo, else the workload's, else scale × reference latency.
	switch {
	case opts.SLO > 0:
		md.slo = opts.SLO
	case w.SLO > 0:
		md.slo = w.SLO.D()
	default:
		scale := w.SLOScale
		if scale == 0 {
			scale = planner.DefaultSLOScale
		}
		ref, _, ok := planner.ReferenceLatencyUs(mp, nil)
		if !ok {
			add("profile: model %s: no batch-1 whole-GPU latency to derive the default SLO from; give slo in the workload or --slo", mp.Name)
			return nil, probs
		}
		us := math.Round(scale * ref)
		if !(us >= 1 && us < float64(math.MaxInt64/int64(time.Microsecond))) {
			// All-zero or absurd latencies: the derived SLO is no duration at all.
			add("profile: model %s: the default SLO, %g × its batch-1 latency (%g µs), is not a usable duration: check the profile's latencies, or give slo in the workload or --slo", mp.Name, scale, ref)
			return nil, probs
		}
		md.slo = time.Duration(us) * time.Microsecond
	}
	if md.slo <= 0 {
		add("workload: model %s: slo: %s: must be > 0", w.Name, md.slo)
	}
	T := float64(md.slo) / float64(time.Microsecond)
	md.budget = T - math.Round(opts.Alpha*T)
	if len(probs) > 0 {
		return nil, probs
	}
	return md, nil
}

// latency returns C for blocks [i,j) at (k,v,b) in µs, and whether it is profiled.
func (md *modelData) latency(k, v, b, i, j int) (float64, bool) {
	pre, ok := md.pre[lkey{k, v, b}]
	if !ok {
		return 0, false
	}
	return pre[j] - pre[i], true
}

// beta is the batch-formation allowance of the head stage at batch b, in µs.
func (md *modelData) beta(b int) float64 {
	if !md.betaOn || b <= 1 {
		return 0
	}
	if md.lambda <= 0 {
		return math.Inf(1) // NP found no capacity: a batch can never be assumed to fill
	}
	return BatchFormationRho * float64(b-1) / md.lambda
}
