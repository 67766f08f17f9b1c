package pard

import (
	"fmt"
	"math"
	"sort"

	"github.com/plan-dev/plan/dataplane"
)

// build derives the per-module structure (paths, budgets) from the deployment graph.
func (p *Pipeline) build(ring int) error {
	d := p.dep
	p.mods = make([]pardModule, len(d.Stages))
	p.workers = make([]pardWorker, len(d.Topo.Workers))
	preds := make([][]dataplane.StageID, len(d.Stages))
	for i := range d.Stages {
		for _, n := range d.Stages[i].Next {
			preds[n] = append(preds[n], dataplane.StageID(i))
		}
	}
	nb := int(math.Ceil(float64(p.window)/float64(100*dataplane.Millisecond))) + 1
	for ai := range d.Apps {
		a := &d.Apps[ai]
		if len(a.Entry) != 1 {
			return fmt.Errorf("application %s: pipeline policies need exactly one entry module, found %d", a.Name, len(a.Entry))
		}
		if len(a.Pipelines) > 1 {
			return fmt.Errorf("application %s: pipeline policies serve one module graph per application, found %d pipelines (a PPipe plan?)", a.Name, len(a.Pipelines))
		}
		order, err := appOrder(d, a, preds)
		if err != nil {
			return err
		}
		if err := p.initModules(ai, order, preds, nb, ring); err != nil {
			return err
		}
		p.derivePaths(a, order, preds)
	}
	return nil
}

// appOrder is the topological order (Kahn) of the modules application a reaches from its
// entry; the graph must have one entry and one sink (branches merge), as PARD §3 assumes.
func appOrder(d *dataplane.Deployment, a *dataplane.App, preds [][]dataplane.StageID) ([]dataplane.StageID, error) {
	// Topological order of the modules reachable from the entry (Kahn).
	reach := map[dataplane.StageID]bool{}
	var stack []dataplane.StageID
	stack = append(stack, a.Entry[0])
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if reach[s] {
			continue
		}
		reach[s] = true
		stack = append(stack, d.Stages[s].Next...)
	}
	indeg := map[dataplane.StageID]int{}
	for s := range reach {
		for _, pr := range preds[s] {
			if !reach[pr] {
				return nil, fmt.Errorf("application %s: module %s has a predecessor %s the entry does not reach", a.Name, d.Stages[s].Name, d.Stages[pr].Name)
			}
		}
		indeg[s] = len(preds[s])
	}
	var order []dataplane.StageID
	ready := []dataplane.StageID{a.Entry[0]}
	if indeg[a.Entry[0]] != 0 {
		return nil, fmt.Errorf("application %s: the entry module %s has predecessors (a cycle?)", a.Name, d.Stages[a.Entry[0]].Name)
	}
	for len(ready) > 0 {
		s := ready[0]
		ready = ready[1:]
		order = append(order, s)
		for _, n := range d.Stages[s].Next {
			indeg[n]--
			if indeg[n] == 0 {
				ready = append(ready, n)
			}
		}
	}
	if len(order) != len(reach) {
		return nil, fmt.Errorf("application %s: the module graph has a cycle", a.Name)
	}
	sinks := 0
	for _, s := range order {
		if len(d.Stages[s].Next) == 0 {
			sinks++
		}
	}
	if sinks != 1 {
		return nil, fmt.Errorf("application %s: pipeline policies need exactly one sink module (branches must merge), found %d", a.Name, sinks)
	}
	return order, nil
}

// initModules sets up the modules of application ai (in order) and their workers: windows,
// rings, and which workers serve from the start (Stage.Active).
func (p *Pipeline) initModules(ai int, order []dataplane.StageID, preds [][]dataplane.StageID, nb, ring int) error {
	d := p.dep
	a := &d.Apps[ai]
	pa := pardApp{id: dataplane.AppID(ai), slo: a.SLO, entry: a.Entry[0], mods: order,
		ingress: make([]int64, p.scaleDown+p.scaleWin+1), rate5: make([]float64, p.scaleDown+1),
		draw: make([]float64, len(d.Stages))}
	p.apps = append(p.apps, pa)
	for _, s := range order {
		st := &d.Stages[s]
		m := &p.mods[s]
		m.used = true
		m.stage = s
		m.app = dataplane.AppID(ai)
		m.slo = a.SLO
		m.batch = st.Batch
		m.d = st.Lat(st.Batch)
		m.workers = st.Pool
		m.preds = len(preds[s])
		m.qb = make([]qBucket, nb)
		for i := range m.qb {
			m.qb[i].n = -1
		}
		m.u = make([]float32, ring)
		m.tin = make([]float64, p.epsN)
		m.ts = make([]float64, p.epsN)
		m.wclHist = make([][]dataplane.Time, max(1, int(math.Ceil(float64(p.window)/float64(p.sync)))))
		if len(st.Pool) == 0 {
			return fmt.Errorf("application %s: module %s has no workers", a.Name, st.Name)
		}
		active := st.Active
		if active <= 0 || active > len(st.Pool) {
			active = len(st.Pool)
		}
		for i, w := range st.Pool {
			pw := &p.workers[w]
			pw.mod = s
			pw.pos = i
			pw.activeAt = dataplane.Never
			if i < active {
				pw.activeAt = 0
			}
		}
		p.reindex(m, 0)
	}
	return nil
}

// derivePaths derives every module's downstream paths (Σd, planned hops), its prefix and
// whole-path Σd (budget splits), the merge it feeds and its ancestors (pard-oc).
func (p *Pipeline) derivePaths(a *dataplane.App, order []dataplane.StageID, preds [][]dataplane.StageID) {
	d := p.dep
	// Downstream paths of every module and Σd over whole paths.
	for _, s := range order {
		m := &p.mods[s]
		var walk func(cur dataplane.StageID, acc []dataplane.StageID, hops dataplane.Time)
		walk = func(cur dataplane.StageID, acc []dataplane.StageID, hops dataplane.Time) {
			st := &d.Stages[cur]
			if len(st.Next) == 0 {
				pp := pardPath{mods: append([]dataplane.StageID(nil), acc...), hops: hops, samps: make([]float64, p.samples)}
				for _, x := range pp.mods {
					pp.sumD += p.mods[x].d
				}
				m.paths = append(m.paths, pp)
				return
			}
			for _, n := range st.Next {
				walk(n, append(acc, n), hops+st.Xfer(st.Batch))
			}
		}
		walk(s, nil, 0)
	}
	for _, s := range order {
		m := &p.mods[s]
		var down dataplane.Time
		for _, pp := range m.paths {
			down = max(down, pp.sumD)
		}
		// Longest prefix Σd ending at s (topological DP over predecessors).
		var pre dataplane.Time
		for _, pr := range preds[s] {
			pre = max(pre, p.mods[pr].prefD)
		}
		m.prefD = pre + m.d
		m.merge = dataplane.NoStage
		for cur := s; len(d.Stages[cur].Next) == 1; {
			n := d.Stages[cur].Next[0]
			if len(preds[n]) > 1 {
				m.merge = n
				break
			}
			cur = n
		}
		m.sumD = m.prefD + down
		// Ancestors for pard-oc.
		seen := map[dataplane.StageID]bool{}
		var up func(x dataplane.StageID)
		up = func(x dataplane.StageID) {
			for _, pr := range preds[x] {
				if !seen[pr] {
					seen[pr] = true
					m.ances = append(m.ances, pr)
					up(pr)
				}
			}
		}
		up(s)
		sort.Slice(m.ances, func(i, j int) bool { return m.ances[i] < m.ances[j] })
		if m.preds > 1 {
			p.merges = append(p.merges, s)
		}
		m.budget = dataplane.Time(float64(a.SLO) * float64(m.d) / float64(max(m.sumD, 1)))
		m.cumBudget = dataplane.Time(float64(a.SLO) * float64(m.prefD) / float64(max(m.sumD, 1)))
	}
}
