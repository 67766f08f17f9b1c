package dyorc

// The Ray-Serve-like baseline's router and autoscaler (DyOrc §8).

import (
	"slices"

	"github.com/plan-dev/plan/dataplane"
)

// ongoing counts the queued and running tasks of service sv on GPU d.
func (p *Policy) ongoing(d, sv int) int {
	dv := &p.devs[d]
	n := int(dv.qn[sv])
	if dv.running && dv.runSvc == sv {
		n++
	}
	return n
}

// rayRoute picks the less busy of two random replicas of sv (Ray Serve's default router);
// a service without replicas gets one on the least busy GPU.
func (p *Policy) rayRoute(sv int) int {
	reps := p.rayRep[sv]
	if p.nDown > 0 {
		// Ray Serve's router skips dead replicas; with none left the service gets a new one
		// on a live GPU, as for a service without replicas.
		reps = p.liveOf(reps)
		if len(reps) == 0 {
			p.rayAdd(sv)
			reps = p.liveOf(p.rayRep[sv])
		}
	}
	if len(reps) == 0 {
		p.rayAdd(sv)
		reps = p.rayRep[sv]
	}
	if len(reps) == 0 {
		return p.nextLive()
	}
	next := func() int {
		p.rayRng ^= p.rayRng << 13
		p.rayRng ^= p.rayRng >> 7
		p.rayRng ^= p.rayRng << 17
		return int(p.rayRng % uint64(len(reps)))
	}
	a, b := reps[next()], reps[next()]
	if p.ongoing(b, sv) < p.ongoing(a, sv) {
		return b
	}
	return a
}

// rayAdd adds a replica of sv on the GPU with the least queued work that has none.
func (p *Policy) rayAdd(sv int) {
	best, bestN := -1, 0
	for g := range p.devs {
		if slices.Contains(p.rayRep[sv], g) || p.down[g] > 0 {
			continue
		}
		n := len(p.devs[g].queue)
		if best < 0 || n < bestN {
			best, bestN = g, n
		}
	}
	if best >= 0 {
		p.rayRep[sv] = append(p.rayRep[sv], best)
	}
}

// rayScale is the autoscaler's control loop: a service whose ongoing requests per replica
// stay above the target for the upscale delay gets one more replica; one idle for the
// downscale delay loses one (keeping one).
func (p *Policy) rayScale(now dataplane.Time) {
	for sv := range p.rayRep {
		reps := p.rayRep[sv]
		if len(reps) == 0 {
			continue
		}
		n := 0
		for _, g := range reps {
			n += p.ongoing(g, sv)
		}
		per := float64(n) / float64(len(reps))
		switch {
		case per > RayTargetOngoing:
			p.rayIdle[sv] = -1
			if p.rayOver[sv] < 0 {
				p.rayOver[sv] = now
			} else if now-p.rayOver[sv] >= RayUpscaleDelay {
				p.rayAdd(sv)
				p.rayOver[sv] = -1
			}
		case n == 0:
			p.rayOver[sv] = -1
			if p.rayIdle[sv] < 0 {
				p.rayIdle[sv] = now
			} else if now-p.rayIdle[sv] >= RayDownscaleDelay && len(reps) > 1 {
				p.rayRep[sv] = reps[:len(reps)-1]
				p.rayIdle[sv] = -1
			}
		default:
			p.rayOver[sv], p.rayIdle[sv] = -1, -1
		}
	}
}
