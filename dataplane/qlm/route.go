package qlm

import (
	"fmt"
	"math"

	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
)

// Size routing (Mélange, Griggs et al. 2024, §5): a least-cost plan over request-size buckets ×
// GPU types serves each bucket on the types where the ILP put its rate, and its capacity rule
// holds only if short and long requests go there. Without routing, long prompts land on the
// cheap types sized for short ones and the mixed fleet misses its SLOs (Mélange §5).
// A request takes the route of its class nearest its prompt and output tokens, then one of the
// route's GPU types by share, drawn from its ID so simulate and serve agree; QLM's own
// scheduling then acts among the instances of that type.

// appRoutes are the routes of one class.
type appRoutes []qlmsec.QLMRoute

// buildRoutes indexes the set-up's routes by class (app), checking their shares.
func (p *Policy) buildRoutes() error {
	p.routes = make([]appRoutes, len(p.class))
	byName := map[string]int{}
	for i, c := range p.class {
		byName[c.Name] = i
	}
	for k, r := range p.setup.Routes {
		i, ok := byName[r.Class]
		if !ok {
			return fmt.Errorf("qlm: routes[%d].class %q: no such class", k, r.Class)
		}
		for j, g := range r.GPUs {
			if !(g.Share >= 0) || math.IsInf(g.Share, 0) {
				return fmt.Errorf("qlm: routes[%d].gpus[%d].share %v: want a finite share ≥ 0", k, j, g.Share)
			}
		}
		p.routes[i] = append(p.routes[i], r)
	}
	return nil
}

// routeGPU is the GPU type the plan's routes send s to ("" = any instance of its model).
func (p *Policy) routeGPU(s *seq) string {
	if int(s.App) >= len(p.routes) {
		return ""
	}
	rs := p.routes[s.App]
	if len(rs) == 0 {
		return ""
	}
	best, bd := -1, math.Inf(1)
	for i, r := range rs {
		d := math.Abs(r.InputTokens-float64(s.Prompt)) + math.Abs(r.OutputTokens-float64(s.Out))
		if d < bd {
			best, bd = i, d
		}
	}
	var tot float64
	for _, g := range rs[best].GPUs {
		tot += g.Share
	}
	if tot <= 0 {
		return ""
	}
	u := llm.U01(uint64(s.ID), 3) * tot
	for _, g := range rs[best].GPUs {
		if u < g.Share {
			return g.GPU
		}
		u -= g.Share
	}
	return rs[best].GPUs[len(rs[best].GPUs)-1].GPU
}

// routed lists the live instances for model on GPU type gpu, or every eligible instance of
// model when gpu is "" or none of that type is live (failover keeps serving).
func (p *Policy) routed(model, gpu string) []*instance {
	el := p.eligible(model)
	if gpu == "" {
		return el
	}
	key := model + "\x00" + gpu
	if r, ok := p.elig[key]; ok && !p.fullStep {
		return r
	}
	var out []*instance
	for _, in := range el {
		if in.gpu == gpu {
			out = append(out, in)
		}
	}
	if len(out) == 0 {
		out = el
	}
	p.elig[key] = out
	return out
}

// allowed reports whether in may take a group of model routed to gpu.
func (p *Policy) allowed(in *instance, model, gpu string) bool {
	if gpu == "" || in.gpu == gpu {
		return true
	}
	r := p.routed(model, gpu)
	return len(r) > 0 && r[0].gpu != gpu
}

// seqRoute stamps s with its route (newSeq's caller).
func (p *Policy) seqRoute(s *seq) { ext(s).gpu = p.routeGPU(s) }
