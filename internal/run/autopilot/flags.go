// Package autopilot is the work of `plan simulate PLAN --autopilot` (Run: one pass over a
// trace re-planning as the load moves, beside the static plan and the plans solved for the
// trace's peak and mean, with its --report) and the autopilot set-up of `plan serve
// --autopilot` (ForServe). Both check the --autopilot-* options the same way (Flags).
package autopilot

import (
	"slices"
	"strings"
	"time"

	"github.com/plan-dev/plan/dataplane"
	ap "github.com/plan-dev/plan/dataplane/autopilot"
	"github.com/plan-dev/plan/internal/run"
)

// Flags are the --autopilot options of `plan serve` and `plan simulate`; the defaults named
// are the flags' (cli binds them).
type Flags struct {
	// Mode is --autopilot: on (switch plans) or advise (only recommend); "" = off (default).
	Mode string
	// Window is --autopilot-window, the observation window (one forecast step); default 10s.
	Window time.Duration
	// History is --autopilot-history, windows of history kept; default ap.DefaultHistory.
	History int
	// Period is --autopilot-period, Holt-Winters' season in windows; default 0 (Holt).
	Period int
	// MinInterval is --autopilot-min-interval, least time between two switches; default 60s.
	MinInterval time.Duration
	// LoadTime is --autopilot-load-time (simulate only), a new placement's model load time;
	// default 5s.
	LoadTime time.Duration
	// Headroom is --autopilot-headroom, the share above the forecast a new plan must serve;
	// default ap.DefaultHeadroom.
	Headroom float64
	// Burst is --autopilot-burst, the quantile of the windows' burst envelope; default
	// ap.DefaultBurst (0 = follow each window's peak).
	Burst float64
	// Budget is --autopilot-gpu-budget, most GPUs a new plan may take; default 0 (the
	// plan's cluster).
	Budget int
	// Steps is --autopilot-steps, rungs of the cluster ladder; default pap.DefaultSteps.
	Steps int
	// Objective is --autopilot-objective: throughput, cost, or "" (the plan's own; default).
	Objective string
	// SolveLimit is --autopilot-solve-limit, the time limit of one re-solve; default 30s.
	SolveLimit time.Duration
	// ResolveDelay is --autopilot-resolve-delay (simulate only): a duration or "measured";
	// default "0s".
	ResolveDelay string
}

// Enabled reports whether --autopilot was given.
func (a *Flags) Enabled() bool { return a.Mode != "" }

// CheckGiven refuses an --autopilot-* flag among given (the flags set on the command line,
// in the order the flag set visits them) without --autopilot (it would do nothing), and
// --autopilot-load-time or --autopilot-resolve-delay when serving (real model loads are
// timed by the reload, real re-solves take the time they take).
func (a *Flags) CheckGiven(given []string, serving bool) error {
	for _, name := range given {
		if !strings.HasPrefix(name, "autopilot-") {
			continue
		}
		switch {
		case !a.Enabled():
			return run.UsageErrorf("--%s needs --autopilot", name)
		case serving && name == "autopilot-load-time":
			return run.UsageErrorf("--autopilot-load-time applies to plan simulate: plan serve loads the new plan's models before it switches")
		case serving && name == "autopilot-resolve-delay":
			return run.UsageErrorf("--autopilot-resolve-delay applies to plan simulate: plan serve's re-solves take the time they take")
		}
	}
	return nil
}

// Config checks the flags (exit 2 naming the flag) and returns the loop's configuration.
func (a *Flags) Config() (ap.Config, error) {
	mode, err := ap.ParseMode(a.Mode)
	if err != nil {
		return ap.Config{}, run.UsageError(err)
	}
	switch {
	case a.Objective != "" && a.Objective != "throughput" && a.Objective != "cost":
		return ap.Config{}, run.UsageErrorf("--autopilot-objective %q: want throughput or cost", a.Objective)
	case a.Window <= 0:
		return ap.Config{}, run.UsageErrorf("--autopilot-window %s: must be > 0", a.Window)
	case a.History <= 0:
		return ap.Config{}, run.UsageErrorf("--autopilot-history %d: must be > 0", a.History)
	case a.Period < 0 || a.Period == 1:
		return ap.Config{}, run.UsageErrorf("--autopilot-period %d: want 0 (Holt) or a season of ≥ 2 windows", a.Period)
	case a.Period > a.History:
		return ap.Config{}, run.UsageErrorf("--autopilot-period %d: the forecaster's period is longer than the window history (--autopilot-history %d windows)", a.Period, a.History)
	case a.MinInterval < 0:
		return ap.Config{}, run.UsageErrorf("--autopilot-min-interval %s: must be ≥ 0", a.MinInterval)
	case a.LoadTime < 0:
		return ap.Config{}, run.UsageErrorf("--autopilot-load-time %s: must be ≥ 0", a.LoadTime)
	case !(a.Headroom >= 0 && a.Headroom < 10):
		return ap.Config{}, run.UsageErrorf("--autopilot-headroom %g: must be in [0, 10)", a.Headroom)
	case !(a.Burst >= 0 && a.Burst <= 1):
		return ap.Config{}, run.UsageErrorf("--autopilot-burst %g: must be in [0, 1]", a.Burst)
	case a.Budget < 0:
		return ap.Config{}, run.UsageErrorf("--autopilot-gpu-budget %d: must be ≥ 0", a.Budget)
	case a.Steps < 1 || a.Steps > 64:
		return ap.Config{}, run.UsageErrorf("--autopilot-steps %d: must be in [1, 64]", a.Steps)
	case a.SolveLimit <= 0:
		return ap.Config{}, run.UsageErrorf("--autopilot-solve-limit %s: must be > 0", a.SolveLimit)
	}
	return ap.Config{Mode: mode, Window: run.Us(a.Window), History: a.History, Period: a.Period,
		MinInterval: max(run.Us(a.MinInterval), 1), Headroom: a.Headroom, GPUBudget: a.Budget, Burst: burstQuantile(a.Burst)}, nil
}

// burstQuantile maps --autopilot-burst to Config.Burst: 0 (no envelope) is its negative.
func burstQuantile(q float64) float64 {
	if q == 0 {
		return -1
	}
	return q
}

// simResolveDelay parses --autopilot-resolve-delay: the delay, or measured.
func (a *Flags) simResolveDelay() (delay dataplane.Time, measured bool, err error) {
	if a.ResolveDelay == "measured" {
		return 0, true, nil
	}
	d, err := time.ParseDuration(a.ResolveDelay)
	if err != nil || d < 0 {
		return 0, false, run.UsageErrorf("--autopilot-resolve-delay %q: want a duration ≥ 0 (e.g. 800ms) or measured", a.ResolveDelay)
	}
	return run.Us(d), false, nil
}

// given reports whether flag is among the flags given on the command line.
func given(list []string, flag string) bool { return slices.Contains(list, flag) }
