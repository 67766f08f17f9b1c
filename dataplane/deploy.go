package dataplane

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/plan-dev/plan/formats"
)

// Validate checks the deployment's internal consistency (indices in range, pools consistent
// with workers, latency tables present).
func (d *Deployment) Validate() error {
	var errs formats.ErrorList
	add := func(path string, value any, rule string) {
		errs = append(errs, &formats.FieldError{Path: path, Value: fmt.Sprint(value), Rule: rule})
	}
	if len(d.Apps) == 0 {
		add("apps", 0, "a deployment needs at least one application")
	}
	for i, a := range d.Apps {
		if a.SLO <= 0 {
			add(fmt.Sprintf("apps[%d].slo", i), a.SLO, "must be > 0")
		}
		for _, s := range a.Entry {
			if int(s) < 0 || int(s) >= len(d.Stages) {
				add(fmt.Sprintf("apps[%d].entry", i), s, "no such stage")
			}
		}
	}
	for i := range d.Stages {
		s := &d.Stages[i]
		p := fmt.Sprintf("stages[%d]", i)
		if int(s.App) < 0 || int(s.App) >= len(d.Apps) {
			add(p+".app", s.App, "no such application")
		}
		if len(s.LatUs) < 2 {
			add(p+".lat_us", len(s.LatUs), "needs latencies for batch 1 and up")
		}
		if s.Batch < 1 {
			add(p+".batch", s.Batch, "must be >= 1")
		}
		for _, n := range s.Next {
			if int(n) < 0 || int(n) >= len(d.Stages) {
				add(p+".next", n, "no such stage")
			}
		}
		for _, w := range s.Pool {
			if int(w) < 0 || int(w) >= len(d.Topo.Workers) {
				add(p+".pool", w, "no such worker")
			} else if d.Topo.Workers[w].Stage != StageID(i) {
				add(p+".pool", w, "worker belongs to another stage")
			}
		}
	}
	for i, w := range d.Topo.Workers {
		if int(w.Server) < 0 || int(w.Server) >= len(d.Topo.Servers) {
			add(fmt.Sprintf("workers[%d].server", i), w.Server, "no such server")
		}
		if w.VGPU < 1 {
			add(fmt.Sprintf("workers[%d].vgpu", i), w.VGPU, "must be >= 1")
		}
	}
	return errs.Err()
}

// FromPlan builds the deployment a PPipe-style plan (PPipe, NP or DART-r) describes: one app
// per model, one stage per partition, and workers packed onto the plan's cluster. Slices of
// one (model, stage index, GPU type, level) share GPUs in order, v slices per GPU; each such
// group starts on a fresh server when the cluster has room, as the authors' simulator packs
// pools separately. Latencies come from the embedded profile when it has the (GPU, v, batch)
// entry, else from the plan (a smaller batch then costs as much as the planned one, which is
// pessimistic and therefore never breaks a deadline the plan promised).
//
// Errors (plan not matching its cluster, inconsistent partitions) are a formats.ErrorList
// with field paths into the plan.
func FromPlan(p *formats.Plan) (*Deployment, error) {
	var errs formats.ErrorList
	add := func(path string, value any, rule string) {
		errs = append(errs, &formats.FieldError{Path: path, Value: fmt.Sprint(value), Rule: rule})
	}
	if p.PPipe == nil && p.PARD != nil {
		return FromPARDPlan(p) // multi-module pipelines (PARD)
	}
	if p.PPipe == nil {
		return nil, formats.ErrorList{{Path: "ppipe", Rule: "the plan has no ppipe section (only PPipe, NP and DART-r plans can be simulated so far)"}}
	}
	cl := p.Cluster
	if cl == nil && p.Provenance.Embedded != nil {
		cl = p.Provenance.Embedded.Cluster
	}
	if cl == nil {
		return nil, formats.ErrorList{{Path: "cluster", Rule: "the plan embeds no cluster"}}
	}
	var profiles []formats.Profile
	if p.Provenance.Embedded != nil {
		profiles = p.Provenance.Embedded.Profiles
	}
	findModel := func(name string) *formats.ModelProfile {
		for i := range profiles {
			if m, ok := profiles[i].Model(name); ok {
				return m
			}
		}
		return nil
	}
	bw := cl.EffectiveNICMbps()
	if bw <= 0 {
		add("cluster.nic_gbps", cl.NICGbps, "must be > 0")
	}

	// Pass 1: validate partitions against the cluster and count slices per packing group.
	type groupKey struct {
		app, stage int
		gpu        string
		v          int
	}
	type group struct {
		key    groupKey
		slices int
	}
	var groups []*group
	gindex := map[groupKey]*group{}
	for mi, m := range p.PPipe.Models {
		mp := fmt.Sprintf("ppipe.models[%d]", mi)
		if m.SLO <= 0 {
			add(mp+".slo", m.SLO, "must be > 0")
		}
		for pi, pl := range m.Pipelines {
			pp := fmt.Sprintf("%s.pipelines[%d]", mp, pi)
			if pl.Batch < 1 {
				add(pp+".batch", pl.Batch, "must be >= 1")
			}
			if len(pl.Partitions) == 0 {
				add(pp+".partitions", 0, "a pipeline needs at least one partition")
			}
			for di, part := range pl.Partitions {
				qp := fmt.Sprintf("%s.partitions[%d]", pp, di)
				pool, ok := cl.Pool(part.GPU)
				if !ok {
					add(qp+".gpu", part.GPU, "the plan's cluster has no GPUs of this type")
					continue
				}
				if !containsInt(pool.Levels(), part.VGPU) {
					add(qp+".vgpu", part.VGPU, fmt.Sprintf("the cluster allows levels %v for %s", pool.Levels(), part.GPU))
				}
				if part.Count < 1 {
					add(qp+".count", part.Count, "must be >= 1")
				}
				if part.StageLatencyUs <= 0 {
					add(qp+".stage_latency_us", part.StageLatencyUs, "must be > 0")
				}
				if part.EndBlock <= part.FirstBlock {
					add(qp+".end_block", part.EndBlock, "must be > first_block")
				}
				if di > 0 && part.FirstBlock != pl.Partitions[di-1].EndBlock {
					add(qp+".first_block", part.FirstBlock, fmt.Sprintf("must equal the previous partition's end_block %d", pl.Partitions[di-1].EndBlock))
				}
				if part.VGPU < 1 || part.Count < 1 {
					continue
				}
				k := groupKey{mi, di, part.GPU, part.VGPU}
				g := gindex[k]
				if g == nil {
					g = &group{key: k}
					gindex[k] = g
					groups = append(groups, g)
				}
				g.slices += part.Count
			}
		}
	}
	// GPU demand per type versus the cluster.
	need := map[string]int{}
	for _, g := range groups {
		need[g.key.gpu] += ceilDiv(g.slices, g.key.v)
	}
	types := make([]string, 0, len(need))
	for t := range need {
		types = append(types, t)
	}
	sort.Strings(types)
	for _, t := range types {
		pool, _ := cl.Pool(t)
		if need[t] > pool.Count {
			add("ppipe.models", t, fmt.Sprintf("the plan needs %d %s GPUs but its cluster has %d", need[t], t, pool.Count))
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}

	// Pass 2: lay out servers and GPUs per type, then carve slices.
	d := &Deployment{}
	typeGPU := map[string][]int{} // type → global GPU indices in server order
	for _, gp := range cl.GPUs {
		per := gp.PerServer
		if per < 1 {
			per = 1
		}
		for i := 0; i < gp.Count; i++ {
			if i%per == 0 {
				d.Topo.Servers = append(d.Topo.Servers, Server{
					Name:   fmt.Sprintf("%s-s%d", gp.Type, i/per),
					UpMbps: bw, DownMbps: bw,
				})
			}
			typeGPU[gp.Type] = append(typeGPU[gp.Type], len(d.Topo.GPUs))
			d.Topo.GPUs = append(d.Topo.GPUs, GPU{Type: gp.Type, Class: gp.Class, Server: ServerID(len(d.Topo.Servers) - 1)})
		}
	}
	// Decide per type whether groups can start on server boundaries.
	aligned := map[string]bool{}
	for _, t := range types {
		pool, _ := cl.Pool(t)
		per := max(pool.PerServer, 1)
		used := 0
		for _, g := range groups {
			if g.key.gpu == t {
				used = ceilDiv(used, per)*per + ceilDiv(g.slices, g.key.v)
			}
		}
		aligned[t] = used <= pool.Count
	}
	nextGPU := map[string]int{}
	type cursor struct {
		gpus  []int // GPUs of the group
		slice int   // next slice index within the group
	}
	cursors := map[groupKey]*cursor{}
	for _, g := range groups {
		pool, _ := cl.Pool(g.key.gpu)
		per := max(pool.PerServer, 1)
		n := nextGPU[g.key.gpu]
		if aligned[g.key.gpu] {
			n = ceilDiv(n, per) * per
		}
		cnt := ceilDiv(g.slices, g.key.v)
		cursors[g.key] = &cursor{gpus: typeGPU[g.key.gpu][n : n+cnt]}
		nextGPU[g.key.gpu] = n + cnt
	}

	for mi, m := range p.PPipe.Models {
		app := App{
			Name: m.Model, SLO: Time(time.Duration(m.SLO) / time.Microsecond),
			Weight: m.Weight, RateRPS: planRate(m),
		}
		aid := AppID(len(d.Apps))
		prof := findModel(m.Model)
		for pi, pl := range m.Pipelines {
			var chain []StageID
			for di, part := range pl.Partitions {
				sid := StageID(len(d.Stages))
				st := Stage{
					Name:     fmt.Sprintf("%s/p%d/s%d", m.Model, pi, di),
					App:      aid,
					Pipeline: pi,
					Index:    di,
					Batch:    pl.Batch,
				}
				st.LatUs = stageLatencies(prof, part, pl.Batch)
				if di+1 < len(pl.Partitions) {
					st.Next = []StageID{sid + 1}
					if prof != nil && part.EndBlock-1 < len(prof.CutBytes) && part.EndBlock >= 1 {
						st.OutBytes = prof.CutBytes[part.EndBlock-1]
					}
					switch {
					case part.TransferUs > 0:
						st.XferPerSampleUs = part.TransferUs / float64(pl.Batch)
					case st.OutBytes > 0 && bw > 0:
						st.XferPerSampleUs = 8 * float64(st.OutBytes) / bw
					}
				}
				cur := cursors[groupKey{mi, di, part.GPU, part.VGPU}]
				pool, _ := cl.Pool(part.GPU)
				for c := 0; c < part.Count; c++ {
					gi := cur.gpus[cur.slice/part.VGPU]
					slot := cur.slice % part.VGPU
					cur.slice++
					w := WorkerID(len(d.Topo.Workers))
					name := fmt.Sprintf("%s#%d", part.GPU, gi)
					if part.VGPU > 1 {
						name = fmt.Sprintf("%s#%d/%d.%d", part.GPU, gi, part.VGPU, slot)
					}
					d.Topo.Workers = append(d.Topo.Workers, Worker{
						Name: name, GPU: gi, Server: d.Topo.GPUs[gi].Server, Type: part.GPU,
						Class: pool.Class, VGPU: part.VGPU, Stage: sid,
					})
					st.Pool = append(st.Pool, w)
				}
				d.Stages = append(d.Stages, st)
				chain = append(chain, sid)
			}
			if len(chain) > 0 {
				app.Entry = append(app.Entry, chain[0])
			}
			app.Pipelines = append(app.Pipelines, chain)
		}
		d.Apps = append(d.Apps, app)
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return d, nil
}

// stageLatencies builds LatUs[1..batch] for a partition: profile block sums (each block ≥ 1 µs,
// rounded up to whole µs) where the profile has the entry; the plan's stage latency for the
// planned batch and, pessimistically, for batches the profile lacks.
func stageLatencies(prof *formats.ModelProfile, part formats.Partition, batch int) []Time {
	planned := Time(math.Ceil(part.StageLatencyUs))
	lat := make([]Time, batch+1)
	for b := 1; b <= batch; b++ {
		lat[b] = planned
		if prof == nil || b == batch {
			continue
		}
		e, ok := prof.Lookup(part.GPU, part.VGPU, b)
		if !ok || part.EndBlock > len(e.BlockUs) || part.FirstBlock < 0 {
			continue
		}
		var s float64
		for _, v := range e.BlockUs[part.FirstBlock:part.EndBlock] {
			s += math.Max(v, 1)
		}
		// Never let a smaller batch look slower than the planned one or a larger batch
		// faster than a smaller one would make the dispatcher's scan inconsistent; keep
		// the profile's number as is otherwise (non-monotone tables are real).
		lat[b] = min(Time(math.Ceil(s)), planned)
	}
	return lat
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func ceilDiv(a, b int) int {
	if b <= 0 {
		return 0
	}
	return (a + b - 1) / b
}

// PlanDeployer turns the section of a plan it understands into a deployment. It returns
// ok = false when the plan has no such section; policy is the runtime policy the plan asks
// for by default (PARD plans name theirs; PPipe plans run "ppipe").
type PlanDeployer func(p *formats.Plan) (d *Deployment, policy string, ok bool, err error)

var deployers struct {
	mu    sync.Mutex
	names []string
	fns   map[string]PlanDeployer
}

// RegisterPlanDeployer adds a deployer for one plan section (call from init; names are
// tried in sorted order, so at most one should accept a given plan).
func RegisterPlanDeployer(name string, f PlanDeployer) {
	deployers.mu.Lock()
	defer deployers.mu.Unlock()
	if deployers.fns == nil {
		deployers.fns = map[string]PlanDeployer{}
	}
	if _, dup := deployers.fns[name]; dup {
		panic(fmt.Sprintf("dataplane: plan deployer %q registered twice", name))
	}
	deployers.fns[name] = f
	deployers.names = append(deployers.names, name)
	sort.Strings(deployers.names)
}

// Deploy builds the deployment of a plan with the first registered deployer that accepts
// it, and returns the plan's default policy. This is what `plan simulate` and `plan serve`
// call, so a new system only has to register its deployer and policies.
func Deploy(p *formats.Plan) (*Deployment, string, error) {
	deployers.mu.Lock()
	names := append([]string(nil), deployers.names...)
	deployers.mu.Unlock()
	for _, n := range names {
		d, pol, ok, err := deployers.fns[n](p)
		if !ok {
			continue
		}
		return d, pol, err
	}
	return nil, "", formats.ErrorList{{Path: "", Rule: fmt.Sprintf("the plan has no section the runtime can serve (deployers: %s)", strings.Join(names, ", "))}}
}

func init() {
	RegisterPlanDeployer("ppipe", func(p *formats.Plan) (*Deployment, string, bool, error) {
		if p.PPipe == nil {
			return nil, "", false, nil
		}
		d, err := FromPlan(p)
		return d, "ppipe", true, err
	})
}

// planRate is a model's offered rate at load factor 1.0: the plan's guaranteed rate
// (target_rps, spec §7 item 6), else its capacity (plans without a target).
func planRate(m formats.PPipeModelPlan) float64 {
	if m.TargetRPS > 0 {
		return m.TargetRPS
	}
	return m.ThroughputRPS
}
