package simulate

// The sweep's load points and window. --rate-scale: `--load L` runs every application at
// L × its planned rate and rescales a trace so that its mean rate equals it, so `--load 1`
// replays a trace at the plan's peak, not as it was recorded (a Twitter-shaped trace scaled
// to a 7.6k QPS peak needed `--load 0.2099` to replay as recorded). `--rate-scale S` takes
// the trace's own rate per application as the base instead: 1.0 replays it as recorded.

import (
	"fmt"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/sim"
)

// simLoads are the load points of plan simulate: --load's factors, or with --rate-scale its
// scales of the trace's recorded rates (then base holds those rates, nil otherwise).
func simLoads(a *Args, spec workload.ArrivalSpec, dep *dataplane.Deployment) (loads, base []float64, err error) {
	loads, err = sim.ParseLoadRange(a.Load)
	if err != nil {
		return nil, nil, run.UsageErrorf("--load: %v", err)
	}
	base, scales, err := rateScale(a, spec, dep)
	if err != nil || base == nil {
		return loads, nil, err
	}
	return scales, base, nil
}

// rateScale reads --rate-scale: the trace's recorded rate per application (the base of load
// factor 1.0) and the scales to run at; nil base when the flag is not given.
func rateScale(a *Args, spec workload.ArrivalSpec, dep *dataplane.Deployment) (base, scales []float64, err error) {
	if !a.RateScaleSet {
		return nil, nil, nil
	}
	if a.LoadSet || a.Reference != "" {
		return nil, nil, run.UsageErrorf("--rate-scale: exclusive with --load and --reference-plan (it sets the rates itself)")
	}
	if scales, err = sim.ParseLoadRange(a.RateScale); err != nil {
		return nil, nil, run.UsageErrorf("--rate-scale: %v", err)
	}
	if base, err = traceRates(spec, dep); err != nil {
		return nil, nil, run.UsageErrorf("--rate-scale: %v", err)
	}
	return base, scales, nil
}

// traceRates is the recorded rate (requests/s) of each application of dep in the trace spec
// (workload.ArrivalSpec.RecordedRate).
func traceRates(spec workload.ArrivalSpec, dep *dataplane.Deployment) ([]float64, error) {
	out := make([]float64, len(dep.Apps))
	for i, a := range dep.Apps {
		r, err := spec.RecordedRate(a.Name)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

// pointRequests is how many requests the sweep's load point at load brings: the arrivals
// its processes make at their rates (the trace's recorded rates under --rate-scale, the
// plan's under --load) over the window, counted on a count series' own shape (its bursts
// included), or an exact replay's requests.
func pointRequests(cfg *sim.SweepConfig, load float64) float64 {
	if cfg.Replay != nil {
		return float64(cfg.Replay.Requests())
	}
	var n float64
	for a, ap := range cfg.Dep.Apps {
		rate := ap.RateRPS
		if a < len(cfg.BaseRPS) {
			rate = cfg.BaseRPS[a]
		}
		n += cfg.Arrival.Expected(rate*load, cfg.Duration)
	}
	return n
}

// checkSimulationSize refuses sweeps whose load points would not fit in memory, instead of
// letting the process be killed halfway: the largest load point's real request count.
// scaleFlag names the flag the load points came from (--load or --rate-scale).
func checkSimulationSize(cfg *sim.SweepConfig, scaleFlag string) error {
	peak := 0.0
	for _, l := range cfg.Loads {
		peak = max(peak, l)
	}
	if n := pointRequests(cfg, peak); n > run.MaxRequestsPerPoint {
		return run.UsageErrorf("%s %g over %s: %.3g requests in one load point: more than %d; shorten --duration or lower %s",
			scaleFlag, peak, time.Duration(cfg.Duration)*time.Microsecond, n, run.MaxRequestsPerPoint, scaleFlag)
	}
	return nil
}

// warnBeyondRange says when a load point runs an application above the rate range its plan
// states it was sized for (dataplane.App.RangeRPS: a cascade plan solved with --qps-max
// 400 simulated at 14,000 req/s): what it measures there is extrapolation, not the plan.
func warnBeyondRange(io *run.IO, path string, cfg *sim.SweepConfig, scaleFlag string) {
	peak := 0.0
	for _, l := range cfg.Loads {
		peak = max(peak, l)
	}
	for a, x := range cfg.Dep.Apps {
		rate := x.RateRPS
		if a < len(cfg.BaseRPS) {
			rate = cfg.BaseRPS[a]
		}
		if r := rate * peak; x.RangeRPS > 0 && r > x.RangeRPS*(1+1e-9) {
			fmt.Fprintf(io.Err, "warning: %s: application %s simulated at up to %.4g req/s (%s %g), beyond the plan's stated range [0, %.4g] req/s: extrapolation, not what the plan was sized for (solve with a higher --qps-max, or lower %s)\n",
				formats.EchoName(path), formats.Echo(x.Name), r, scaleFlag, peak, x.RangeRPS, scaleFlag)
		}
	}
}

// maxLoadThatFits is the highest load factor whose load point stays within
// run.MaxRequestsPerPoint (the find-limit extension's cap): requests grow linearly in the load.
func maxLoadThatFits(cfg *sim.SweepConfig) float64 {
	n := pointRequests(cfg, 1)
	if n <= 0 || cfg.Replay != nil {
		return sim.DefaultLimitCap
	}
	return run.MaxRequestsPerPoint / n
}

// fewRequestsRemedy is what the few-requests warnings advise: a longer --duration where
// --duration sets the window, a longer trace where a Trace file does (traceWindow,
// setupLLMSweep: the trace's span, --duration unused).
func fewRequestsRemedy(a *Args, spec sim.ArrivalSpec) string {
	if _, _, ok := spec.Extent(); ok && !a.DurationSet {
		return fmt.Sprintf("replay a longer trace (the trace %s sets the window; --duration is not used)", spec.Name)
	}
	return "use a longer --duration"
}

// traceWindow replays a Trace file whole: without --duration the window is the trace's
// recorded span (a 20-minute count series was cut to the default 30 s, silently). With
// --duration shorter than the span it says on stderr what the cut leaves out. An exact LLM
// replay sets its own window (setupLLMSweep).
func traceWindow(io *run.IO, a *Args, cfg *sim.SweepConfig, spec sim.ArrivalSpec) error {
	span, total, ok := spec.Extent()
	if !ok || span <= 0 {
		return nil
	}
	if cfg.Replay != nil {
		if a.DurationSet {
			lo := cfg.Loads[0]
			for _, l := range cfg.Loads {
				lo = min(lo, l)
			}
			// the replay at load lo divides the trace's times by lo
			cut := 0
			for _, r := range spec.Trace.Requests {
				if float64(r.TimeUs)/lo >= float64(cfg.Duration) {
					cut++
				}
			}
			if cut > 0 {
				fmt.Fprintf(io.Err, "simulate: --duration %s cuts the trace %s (%s at load %.2f): %d of its %d requests are not replayed; leave --duration unset to replay it whole\n",
					a.Duration, spec.Name, time.Duration(float64(cfg.Replay.Span())/lo)*time.Microsecond, lo, cut, total)
			}
		}
		return nil
	}
	if !a.DurationSet {
		cfg.Duration = span
		if !a.WarmupSet {
			cfg.Warmup = sim.DefaultWarmup(cfg.Dep, span)
		}
		return nil
	}
	if cfg.Duration < span {
		cut := float64(total) - spec.RecordedBefore(cfg.Duration)
		fmt.Fprintf(io.Err, "simulate: --duration %s cuts the trace %s (%s recorded): its last %s and %.0f of its %d requests (at the recorded rate) are not replayed; leave --duration unset to replay it whole\n",
			a.Duration, spec.Name, time.Duration(span)*time.Microsecond, time.Duration(span-cfg.Duration)*time.Microsecond, cut, total)
	}
	return nil
}
