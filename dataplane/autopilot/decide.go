package autopilot

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/plan-dev/plan/dataplane"
)

// Mode says what the loop does with a better plan.
type Mode string

// Modes: Act switches to it (`--autopilot`, `--autopilot=on`), Advise only recommends it
// (`--autopilot=advise`), for users who apply plans through their own pipeline.
const (
	Act    Mode = "on"
	Advise Mode = "advise"
)

// ParseMode reads a --autopilot value.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "on", "true", "act":
		return Act, nil
	case "advise":
		return Advise, nil
	}
	return "", fmt.Errorf("--autopilot %q: want on or advise", s)
}

// Config tunes the loop. Zero values take the defaults (withDefaults).
type Config struct {
	Mode Mode
	// Window is the observation window (default 10 s); History the windows kept (default 60).
	Window  dataplane.Time
	History int
	// Period, when > 0, forecasts with Holt-Winters over a season of Period windows (it must
	// fit in History); 0 = Holt's linear trend. Alpha, Beta, Gamma: smoothing (0 = defaults).
	Period             int
	Alpha, Beta, Gamma float64
	// Horizon is how many windows ahead the loop plans for: the forecast is the highest of
	// the next Horizon windows (default 3), covering a re-solve and a model load.
	Horizon int
	// Headroom is the share above the forecast a new plan must serve (default 0.15).
	Headroom float64
	// Up and Down bound the band the current plan serves: a re-solve is due when the forecast
	// passes Up × its capacity (default 0.9) or every application's falls below Down × it
	// (default 0.5). Hold windows in a row out of the band (default 2), each confirmed by
	// what arrived in it, make it due: hysteresis against a single noisy window.
	Up, Down float64
	Hold     int
	// MinInterval is the least time from a switch to a switch to fewer GPUs (default 60 s):
	// a rise is followed at once, a fall only once the plan has served that long.
	MinInterval dataplane.Time
	// Burst sizes the plan for the bursts inside a window: the forecasters follow each
	// window's mean rate, and the planned-for rate is that forecast times the Burst
	// quantile (default 0.9) of the sub-window peak over the peak Poisson arrivals at the
	// window's rate would reach, in the kept history. Negative: follow each window's peak
	// itself, the loop before the envelope.
	Burst float64
	// GPUBudget bounds the GPUs a new plan may take (0 = the solver's cluster).
	GPUBudget int
}

// Defaults of Config's zero values.
const (
	DefaultWindow      = 10 * dataplane.Second
	DefaultHistory     = 60
	DefaultHorizon     = 3
	DefaultHeadroom    = 0.15
	DefaultUp          = 0.9
	DefaultDown        = 0.5
	DefaultHold        = 2
	DefaultMinInterval = 60 * dataplane.Second
	DefaultBurst       = 0.9
)

// ErrPeriod marks a Holt-Winters period longer than the window history (bad input).
var ErrPeriod = errors.New("forecaster period longer than the window history")

// positiveOr sets *v to def unless *v > 0: a zero (or negative) setting takes the default.
func positiveOr[T ~int | ~int64 | ~float64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

func (c Config) withDefaults() (Config, error) {
	if c.Mode == "" {
		c.Mode = Act
	}
	positiveOr(&c.Window, DefaultWindow)
	positiveOr(&c.History, DefaultHistory)
	positiveOr(&c.Horizon, DefaultHorizon)
	positiveOr(&c.Headroom, DefaultHeadroom)
	positiveOr(&c.Up, DefaultUp)
	positiveOr(&c.Down, DefaultDown)
	positiveOr(&c.Hold, DefaultHold)
	positiveOr(&c.MinInterval, DefaultMinInterval)
	if c.Burst == 0 {
		c.Burst = DefaultBurst
	}
	switch {
	case c.Period < 0:
		return c, fmt.Errorf("autopilot: forecaster period %d windows: want ≥ 0", c.Period)
	case c.Period > c.History:
		return c, fmt.Errorf("autopilot: %w: period %d windows, history %d windows of %v", ErrPeriod, c.Period, c.History, c.Window)
	case c.Down >= c.Up:
		return c, fmt.Errorf("autopilot: band down %g ≥ up %g: want down < up", c.Down, c.Up)
	case c.GPUBudget < 0:
		return c, fmt.Errorf("autopilot: GPU budget %d: want ≥ 0", c.GPUBudget)
	case c.Burst > 1:
		return c, fmt.Errorf("autopilot: burst quantile %g: want ≤ 1", c.Burst)
	}
	return c, nil
}

// Candidate is a plan the loop may serve, as the loop sees it.
type Candidate struct {
	// Digest identifies the plan (the served plan's digest).
	Digest string `json:"digest"`
	// GPUs is how many physical GPUs it occupies.
	GPUs int `json:"gpus"`
	// Capacity is each application's rate in requests/s that it serves within its SLO.
	Capacity []float64 `json:"capacity_rps"`
	// OverBudget: the best plan within the GPU budget does not serve the demand.
	OverBudget bool `json:"over_budget,omitempty"`
	// Plan is the plan itself, opaque to the loop (a *formats.Plan).
	Plan any `json:"-"`
}

// Demand is what a re-solve is asked for: a plan serving Rates within at most GPUBudget
// GPUs (0 = no bound but the cluster), the fewest GPUs first.
type Demand struct {
	Rates     []float64 `json:"rates_rps"`
	GPUBudget int       `json:"gpu_budget,omitempty"`
}

// Solver re-solves for a demand. Implementations hold their own solver instance; the loop
// calls Solve from one goroutine at a time.
type Solver interface {
	Solve(ctx context.Context, d Demand) (Candidate, error)
}

// Installer switches the served plan (serve: the hot-reload path; sim: the next segment).
type Installer interface {
	Install(now dataplane.Time, c Candidate) error
}

// Decision is one entry of the loop's log.
type Decision struct {
	At dataplane.Time `json:"at_us"`
	// Action: resolve (a re-solve started), switch, advise (a better plan recommended),
	// keep (the re-solve found nothing better), over-budget, error, adopt (an operator
	// replaced the plan).
	Action   string    `json:"action"`
	Why      string    `json:"why"`
	From     string    `json:"from,omitempty"`
	To       string    `json:"to,omitempty"`
	GPUs     int       `json:"gpus,omitempty"`
	Forecast []float64 `json:"forecast_rps,omitempty"`
}

// maxDecisions bounds the decision log kept for /v1/autopilot.
const maxDecisions = 64

// Autopilot is the loop's state. Its methods are safe for concurrent use (serve admits
// from the driver and ticks from the loop's goroutine).
type Autopilot struct {
	mu        sync.Mutex
	cfg       Config
	obs       *Observer
	fc        []*Tracked
	cur       Candidate
	recommend *Candidate
	solving   bool
	out       int
	outWhy    string
	last      dataplane.Time
	switched  bool
	switches  int
	decisions []Decision
	forecast  []float64
	installer Installer
	// pending are windows Admit closed that no Tick has forecast from yet.
	pending [][]Sample
	// retryAt: a re-solve that failed, or found nothing better, is not asked again before
	// it (MinInterval later): the ladder would answer the same, and the log would repeat.
	retryAt dataplane.Time
	retryUp bool
	// outUp: the band was left upwards (the load rose past the plan).
	outUp bool
}

// New starts a loop for apps applications served by current at time start.
func New(cfg Config, apps int, current Candidate, inst Installer, start dataplane.Time) (*Autopilot, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if len(current.Capacity) != apps {
		return nil, fmt.Errorf("autopilot: the current plan has capacities for %d applications, want %d", len(current.Capacity), apps)
	}
	obs, err := NewObserver(apps, cfg.Window, cfg.History, start)
	if err != nil {
		return nil, err
	}
	a := &Autopilot{cfg: cfg, obs: obs, cur: current, installer: inst, forecast: make([]float64, apps)}
	for range apps {
		var f Forecaster = NewHolt(cfg.Alpha, cfg.Beta)
		if cfg.Period > 0 {
			if f, err = NewHoltWinters(cfg.Period, cfg.Alpha, cfg.Beta, cfg.Gamma); err != nil {
				return nil, err
			}
		}
		a.fc = append(a.fc, &Tracked{Forecaster: f})
	}
	return a, nil
}

// Config returns the configuration with its defaults filled in.
func (a *Autopilot) Config() Config { return a.cfg }

// Admit observes one admitted request (the request path: a counter bump under the lock).
func (a *Autopilot) Admit(at dataplane.Time, app int, tokens int64) {
	a.mu.Lock()
	// An arrival past the open window closes it first (a tick that is late, or a driver
	// that ticks only between arrivals): windows keep what arrived in them, and the next
	// Tick forecasts from them.
	if at >= a.obs.WindowStart()+a.cfg.Window {
		a.pending = append(a.pending, a.obs.Roll(at)...)
	}
	a.obs.Admit(at, app, tokens)
	a.mu.Unlock()
}

// Tick closes the windows that ended by now, updates the forecasts and returns the demand
// of a re-solve when one is due (the caller runs it, off the request path, and reports
// with Resolved); nil otherwise. At most one re-solve is outstanding.
func (a *Autopilot) Tick(now dataplane.Time) *Demand {
	a.mu.Lock()
	defer a.mu.Unlock()
	closed := append(a.pending, a.obs.Roll(now)...)
	a.pending = nil
	if len(closed) == 0 {
		return nil
	}
	// The forecasters follow each window's mean rate, the plan is sized for its envelope:
	// the forecast times the bursts the windows carried (envelope). Burst < 0: the
	// forecasters follow each window's peak slice itself.
	for _, w := range closed {
		for app, s := range w {
			if a.cfg.Burst < 0 {
				a.fc[app].Update(s.Peak)
			} else {
				a.fc[app].Update(s.Rate)
			}
		}
	}
	last := closed[len(closed)-1]
	for app, f := range a.fc {
		a.forecast[app] = a.envelope(app, last[app], f)
	}
	if a.fc[0].Observations() < 2 {
		return nil // one window says nothing about a trend
	}
	why, up := a.outOfBand(last)
	if why == "" || (a.out > 0 && up != a.outUp) {
		a.out = 0
	}
	if why == "" {
		return nil
	}
	a.out++
	a.outWhy, a.outUp = why, up
	// Scale up fast, scale down slowly (as replica autoscalers do): a rise is re-solved as
	// soon as it held Hold windows; a fall waits MinInterval after the last switch. A
	// re-solve that failed or kept the plan is not repeated in its direction before retryAt.
	hold := a.cfg.Hold
	if !up {
		hold = a.downHold()
	}
	if a.out < hold || a.solving || (!up && a.switched && now-a.last < a.cfg.MinInterval) || (now < a.retryAt && up == a.retryUp) {
		return nil
	}
	a.solving = true
	d := &Demand{Rates: make([]float64, len(a.forecast)), GPUBudget: a.cfg.GPUBudget}
	for app, f := range a.forecast {
		d.Rates[app] = f * (1 + a.cfg.Headroom)
	}
	a.log(Decision{At: now, Action: "resolve", Why: fmt.Sprintf("%s for %d windows", why, a.out), From: a.cur.Digest, Forecast: clone(a.forecast)})
	return d
}

// envelope is the rate app's plan must serve over the next Horizon windows: the highest
// forecast of them (and what the last window saw), times the burst factor.
func (a *Autopilot) envelope(app int, last Sample, f Forecaster) float64 {
	if a.cfg.Burst < 0 {
		peak := last.Peak
		for h := 1; h <= a.cfg.Horizon; h++ {
			peak = math.Max(peak, f.Forecast(h))
		}
		return peak
	}
	rate := last.Rate
	for h := 1; h <= a.cfg.Horizon; h++ {
		rate = math.Max(rate, f.Forecast(h))
	}
	return rate * a.burst(app)
}

// poissonMax10 is the expected maximum of ten standard normal draws: the highest of a
// window's ten slices of Poisson counts lies about this many standard deviations above the
// slices' mean.
const poissonMax10 = 1.54

// minBurstRequests is the fewest requests in a window's peak slice for its burst to count.
const minBurstRequests = 10

// burst is the Burst quantile of app's sub-window peak over Poisson's at its window rate
// in the kept windows (at least 1; 1 when none counts): how far above a window's mean,
// beyond the Poisson arrivals a plan's capacity assumes, the plan must absorb within the
// window, learnt from what the load did.
func (a *Autopilot) burst(app int) float64 {
	var r []float64
	// A window counts when its peak slice held minBurstRequests: at a trickle one request
	// is a slice's "burst" (ten times a window of one), noise no plan is sized for.
	//
	// The burst is what rises above Poisson arrivals at the window's rate, which the plan's
	// capacity already serves (the planners size for Poisson arrivals): the highest of a
	// window's Subwindows slices of Poisson(m) counts is about m + 1.54·√m (the expected
	// maximum of ten normal draws), so a window's factor is its peak over that.
	slice := float64(a.cfg.Window) / 1e6 / Subwindows
	for _, w := range a.obs.History() {
		if s := w[app]; s.Rate > 0 && s.Peak*slice >= minBurstRequests {
			m := s.Rate * slice
			r = append(r, s.Peak*slice/(m+poissonMax10*math.Sqrt(m)))
		}
	}
	if len(r) == 0 {
		return 1
	}
	slices.Sort(r)
	return math.Max(1, r[min(len(r)-1, int(a.cfg.Burst*float64(len(r))))])
}

// downHold is how many windows below the band make a fall due: Hold times the burstiest
// application's burst factor, rounded (Poisson arrivals, factor 1, keep Hold) — the
// burstier the load, the longer a lull must last before the plan that absorbs its bursts
// is given up.
func (a *Autopilot) downHold() int {
	b := 1.0
	if a.cfg.Burst >= 0 {
		for app := range a.fc {
			b = math.Max(b, a.burst(app))
		}
	}
	return int(math.Round(float64(a.cfg.Hold) * b))
}

// outOfBand says why the forecast left the band the current plan serves ("" = inside).
// What arrived must confirm it (hysteresis against one noisy window, whose trend the
// forecast carries on for a few windows): above Up/(1+Headroom) of the capacity for a rise,
// below Down of it for a fall.
func (a *Autopilot) outOfBand(last []Sample) (why string, up bool) {
	var low []string
	for app, f := range a.forecast {
		c, seen := a.cur.Capacity[app], last[app].Peak
		if a.cfg.Burst >= 0 {
			// What arrived, in the envelope's terms: a burst that came once in a few
			// windows confirms a rise in each of them, as it sizes the plan.
			seen = last[app].Rate * a.burst(app)
		}
		if f > a.cfg.Up*c && seen > a.cfg.Up*c/(1+a.cfg.Headroom) {
			return fmt.Sprintf("app %d forecast %.1f rps above %.0f%% of capacity %.1f rps", app, f, 100*a.cfg.Up, c), true
		}
		if f < a.cfg.Down*c && seen < a.cfg.Down*c {
			low = append(low, fmt.Sprintf("app %d forecast %.1f rps below %.0f%% of capacity %.1f rps", app, f, 100*a.cfg.Down, c))
		}
	}
	if len(low) == len(a.forecast) {
		return strings.Join(low, "; "), false
	}
	return "", false
}

// Resolved reports a re-solve's result at now: the loop switches to a plan that differs
// from the current one (Act), or recommends it (Advise). It returns the decision taken.
//
// The installer runs without the loop's lock held: a reload waits for the driver, and the
// driver observes admissions (Admit) meanwhile.
func (a *Autopilot) Resolved(now dataplane.Time, c Candidate, err error) Decision {
	a.mu.Lock()
	// The re-solve counts as outstanding until its plan is installed: no second one starts
	// while the first switches.
	defer func() {
		a.solving = false
		a.mu.Unlock()
	}()
	d := Decision{At: now, From: a.cur.Digest, To: c.Digest, GPUs: c.GPUs, Forecast: clone(a.forecast)}
	switch {
	case err != nil:
		d.Action, d.Why, d.To = "error", "re-solve failed: "+err.Error(), ""
		a.retryAt, a.retryUp = now+a.cfg.MinInterval, a.outUp
		return a.log(d)
	case c.Digest == a.cur.Digest || (!a.outUp && c.GPUs >= a.cur.GPUs && c.GPUs > 0 && !c.OverBudget) ||
		(a.outUp && !servesMore(c.Capacity, a.cur.Capacity)):
		// A fall the re-solve answers on as many GPUs, or a rise it answers with no more
		// capacity, is not worth a migration's pause.
		a.retryAt, a.retryUp = now+a.cfg.MinInterval, a.outUp
		d.Action, d.Why = "keep", "the re-solve chose the current plan"
		switch {
		case c.Digest == a.cur.Digest:
		case a.outUp:
			d.Why = "the load rose, but the re-solve serves no more than the current plan"
		default:
			d.Why = fmt.Sprintf("the load fell, but the re-solve needs %d GPUs, the current plan %d", c.GPUs, a.cur.GPUs)
		}
		if c.OverBudget {
			d.Action, d.Why = "over-budget", fmt.Sprintf("the load needs more than %s; serving on at the best plan within it", a.budget())
		}
		a.out = 0
		return a.log(d)
	}
	d.Why = a.outWhy
	if c.OverBudget {
		d.Why += fmt.Sprintf("; the load needs more than %s: the best plan within it", a.budget())
	}
	if a.cfg.Mode == Advise {
		d.Action = "advise"
		a.recommend = &c
		a.out = 0
		a.retryAt, a.retryUp = now+a.cfg.MinInterval, a.outUp
		return a.log(d)
	}
	if a.installer != nil {
		a.mu.Unlock()
		err := a.installer.Install(now, c)
		a.mu.Lock()
		if err != nil {
			d.Action, d.Why = "error", "installing the new plan: "+err.Error()
			a.retryAt, a.retryUp = now+a.cfg.MinInterval, a.outUp
			return a.log(d)
		}
	}
	d.Action = "switch"
	a.cur, a.last, a.switched, a.out = c, now, true, 0
	a.switches++
	return a.log(d)
}

// budget names the GPU bound of a re-solve for the log.
func (a *Autopilot) budget() string {
	if a.cfg.GPUBudget > 0 {
		return fmt.Sprintf("the GPU budget %d", a.cfg.GPUBudget)
	}
	return "the cluster's GPUs"
}

// Adopt makes c the served plan without a decision of the loop's (an operator's reload,
// PUT /v1/plan): the band follows the plan that serves.
func (a *Autopilot) Adopt(now dataplane.Time, c Candidate) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if c.Digest == a.cur.Digest || len(c.Capacity) != len(a.cur.Capacity) {
		return
	}
	a.log(Decision{At: now, Action: "adopt", Why: "the served plan was replaced from outside the autopilot", From: a.cur.Digest, To: c.Digest, GPUs: c.GPUs})
	a.cur, a.out = c, 0
}

// Current returns the digest of the plan the loop believes is served.
func (a *Autopilot) Current() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cur.Digest
}

func (a *Autopilot) log(d Decision) Decision {
	a.decisions = append(a.decisions, d)
	if len(a.decisions) > maxDecisions {
		a.decisions = a.decisions[len(a.decisions)-maxDecisions:]
	}
	return d
}

// servesMore reports whether capacity a exceeds b for some application.
func servesMore(a, b []float64) bool {
	for i := range a {
		if i < len(b) && a[i] > b[i] {
			return true
		}
	}
	return false
}

func clone(x []float64) []float64 { return append([]float64(nil), x...) }

// Status is the loop's state as /v1/autopilot shows it.
type Status struct {
	Mode       Mode       `json:"mode"`
	Current    Candidate  `json:"current"`
	Recommend  *Candidate `json:"recommended,omitempty"`
	Forecaster string     `json:"forecaster"`
	// Forecast is each application's planned-for rate (the envelope of the next Horizon windows);
	// Observed the last closed window; MAPE each forecaster's one-step error.
	Forecast []float64 `json:"forecast_rps"`
	Observed []Sample  `json:"observed"`
	Mix      []float64 `json:"mix"`
	MAPE     []float64 `json:"mape"`
	// Burst is each application's learnt burst factor (the forecast's multiplier; 1 without
	// the envelope).
	Burst    []float64 `json:"burst"`
	Solving  bool      `json:"solving"`
	Switches int       `json:"switches"`
	// OverBudget: the last re-solve could not serve the demand within the GPU budget.
	OverBudget bool       `json:"over_budget"`
	Decisions  []Decision `json:"decisions"`
}

// Status returns a snapshot of the loop.
func (a *Autopilot) Status() Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := Status{Mode: a.cfg.Mode, Current: a.cur, Forecaster: a.fc[0].Name(), Forecast: clone(a.forecast),
		Mix: a.obs.Mix(), Solving: a.solving, Switches: a.switches, Decisions: append([]Decision(nil), a.decisions...)}
	if a.recommend != nil {
		r := *a.recommend
		s.Recommend = &r
	}
	if h := a.obs.History(); len(h) > 0 {
		s.Observed = append([]Sample(nil), h[len(h)-1]...)
	}
	for _, f := range a.fc {
		s.MAPE = append(s.MAPE, f.MAPE())
	}
	for app := range a.fc {
		b := 1.0
		if a.cfg.Burst >= 0 {
			b = a.burst(app)
		}
		s.Burst = append(s.Burst, b)
	}
	if n := len(a.decisions); n > 0 {
		last := a.decisions[n-1]
		s.OverBudget = last.Action == "over-budget" || strings.Contains(last.Why, "GPU budget")
	}
	return s
}

// Switches returns how many switches the loop made.
func (a *Autopilot) Switches() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.switches
}

// Decisions returns the decision log (the last 64).
func (a *Autopilot) Decisions() []Decision {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Decision(nil), a.decisions...)
}
