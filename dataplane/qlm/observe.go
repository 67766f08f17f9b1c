package qlm

import (
	"math"

	"github.com/plan-dev/plan/dataplane"
)

// External load (remote engines' /metrics). QLM sits in front of unmodified
// serving engines and drives them through their request queues (QLM §3); when an instance is
// a remote engine (vLLM), that engine may hold more than QLM sent it: requests of other
// clients, or QLM's own requests that outlive QLM's model of the instance. The engine's
// gauges (requests waiting and running) count everything it holds, QLM's forwarded requests
// included, so the external load is their excess over what QLM believes the instance holds
// (its running and swapped sequences: a request is forwarded when it joins the running
// batch). That excess is work ahead of every group of the instance's virtual queue: the RCT
// estimator (QLM §6) adds it to the instance's residual work R_g as the drain of that many
// requests (Eq. 2: n·μ/Θ, μ the mean output of the classes of the instance's model, Θ its
// profiled throughput). Through R_g it reaches every decision that reads the estimate: the
// placement of new groups (least estimated drain), the violation check that triggers a
// replan and the plan generator's instance residuals (QLM §7), the recorded completion
// estimates, and request pulling (QLM §5), where an instance takes another's waiting group
// only when it would start it sooner after its own external load. Without observations
// (the simulator, emulated instances) every term is zero and the policy is unchanged.

// ObserveInstance records what instance's engine reported at now: waiting and running
// requests, everything the engine holds (vLLM's vllm:num_requests_waiting and
// vllm:num_requests_running). It replaces the instance's previous observation; zeros clear it
// (an engine that could not be read). Unknown instance names and non-finite or negative
// values are ignored (negative and NaN count as 0). It must run on the goroutine that calls
// Handle (serve: the driver, through Server.WithPolicy).
func (p *Policy) ObserveInstance(now dataplane.Time, instance string, waiting, running float64) {
	if p.setup == nil {
		return
	}
	n := clampObs(waiting) + clampObs(running)
	for i, in := range p.setup.Instances {
		if in.Name == instance && i < len(p.inst) {
			p.inst[i].observed = n
			p.observedAny = p.observedAny || n > 0
			p.touch(i)
			return
		}
	}
}

func clampObs(x float64) float64 {
	if !(x > 0) || math.IsInf(x, 1) {
		return 0
	}
	return x
}

// externalRequests is the instance's external load: the requests its engine reported beyond
// the ones QLM has running or swapped there (0 without an observation).
func (p *Policy) externalRequests(in *instance) float64 {
	if in.observed <= 0 {
		return 0
	}
	return math.Max(0, in.observed-float64(len(in.Running())+len(in.Swapped())))
}

// externalSeconds is the external load as work ahead of the instance's virtual queue, in
// seconds: the Eq. 2 drain of that many requests of the instance's model (the one it is
// loading while it switches) at its throughput Θ.
func (p *Policy) externalSeconds(in *instance) float64 {
	n := p.externalRequests(in)
	if n == 0 {
		return 0
	}
	model := in.model
	if in.loading {
		model = in.target
	}
	if p.llmFor(in, model) == nil {
		return 0
	}
	return n * p.meanOut(model) / p.theta(in, model)
}

// meanOut is μ for a request of model: the mean expected output tokens of the classes that
// use it (of every class when none does).
func (p *Policy) meanOut(model string) float64 {
	var sum, all float64
	n := 0
	for i := range p.class {
		all += p.class[i].Out.Mean
		if p.class[i].Model == model {
			sum += p.class[i].Out.Mean
			n++
		}
	}
	if n > 0 {
		return sum / float64(n)
	}
	return all / float64(max(len(p.class), 1))
}
