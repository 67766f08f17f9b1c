// Package explain answers "my SLO cannot be met: what can?" when `plan solve` exits 2
// because a target cannot be met, for every system: the closest plan and how far each
// target is from being met, the smallest relaxation of the SLOs (and of the stated rates) at
// which the solve succeeds, and the GPUs to add that make the SLOs as given feasible. Each
// answer is found by a search over one scalar knob that drives the system's own solve and
// verdict (a Probe: the planner, then the prediction at the workload's rates, as solve judges
// a plan), bisected to Tolerance and checked: a relaxation is stated only where the solve
// succeeds at it and fails at 95% of it (GPUs: at one fewer). The search is bounded by a
// number of solves and a time limit, and says when it was cut short. It runs only on the
// failure path, so no successful solve pays for it.
package explain

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/planner"
)

// Search bounds and tolerances.
const (
	// Tolerance is the relative width (2%) the bisection narrows a relaxation factor to before
	// it is rounded to three significant digits and checked.
	Tolerance = 0.02
	// CheckShare is where the check probes: 95% of a stated SLO factor must fail (for a
	// rate, the stated rate divided by 0.95).
	CheckShare = 0.95
	// MaxScale is the most the SLOs are relaxed (and the least share of the stated rates
	// tried): past 64× an SLO is no longer the user's target, and an LLM planner's capacity
	// search at such SLOs simulates for minutes.
	MaxScale = 64
	// DefaultMaxProbes is the most solves one explanation runs.
	DefaultMaxProbes = 48
	// MaxEachSLO is the most SLOs relaxed one at a time (the others as given): each is a
	// search of its own, so a workload of many classes has those of the applications the
	// closest plan misses searched first and the rest named as not searched.
	MaxEachSLO = 4
	// eachSLOProbes are the solves the default budget adds for each SLO relaxed alone: a
	// doubling to ×64 and a bisection to Tolerance take about a dozen.
	eachSLOProbes = 12
)

// Outcome is one probe's verdict: whether `plan solve` would succeed on these inputs.
type Outcome struct {
	Feasible bool
	// Plan is the plan solved (nil where the planner refused): the plan kept, with its
	// prediction at the workload's rates.
	Plan *formats.Plan
	// Refusal is the planner's refusal of a target (nil where it returned a plan).
	Refusal error
}

// Probe solves in with s as `plan solve` does and judges the result. Its error is not a
// verdict (a solver failure, an interruption): the explanation stops there.
type Probe func(ctx context.Context, in planner.Inputs, s planner.Settings) (Outcome, error)

// Request is what an explanation searches from.
type Request struct {
	In       planner.Inputs
	Settings planner.Settings
	// Secs are the registered sections (a relaxed workload is decoded afresh with them).
	Secs  *formats.SectionSet
	Probe Probe
	// Failure is the failed solve: the plan that missed at its rates, or the refusal.
	Failure Outcome
	// MaxProbes bounds the solves (0 = DefaultMaxProbes); Limit the wall time (0 = none),
	// and Deadline, where set and earlier, when the search ends: the failed command's own
	// (plan solve's --time-limit bounds the solve and its explanation together).
	MaxProbes int
	Limit     time.Duration
	Deadline  time.Time
	// Trace, if set, hears of each solve as it starts and ends (a debug log).
	Trace func(string)
}

// Explanation is what the search found.
type Explanation struct {
	// Closest is the closest plan and how far each target is from being met.
	Closest Closest `json:"closest"`
	// SLO is the smallest factor on every SLO at which the solve succeeds.
	SLO *Relaxation `json:"slo,omitempty"`
	// EachSLO are the SLOs relaxed one at a time, the others as given (a workload of two
	// or more): each one's smallest factor at which the solve succeeds, or why none does
	// (another target binds). EachSLONote says which SLOs were not searched.
	EachSLO     []SLOAlone `json:"each_slo,omitempty"`
	EachSLONote string     `json:"each_slo_note,omitempty"`
	// Rate is the largest factor on every stated rate at which it succeeds.
	Rate *Relaxation `json:"rate,omitempty"`
	// GPUs are the additions, per GPU type, that make the SLOs as given feasible, cheapest
	// first; GPUsNone says why none is stated where none is.
	GPUs     []GPUAdd `json:"gpus,omitempty"`
	GPUsNone string   `json:"gpus_none,omitempty"`
	// Solves is how many probes ran; CutShort why the search stopped before it finished
	// ("" where it finished).
	Solves   int    `json:"solves"`
	CutShort string `json:"cut_short,omitempty"`
	// Tolerance and CheckShare are the search's settings, stated with its result.
	Tolerance  float64 `json:"tolerance"`
	CheckShare float64 `json:"check_share"`
}

// Closest is the plan nearest to meeting the targets and the distance of each target.
type Closest struct {
	// Basis says which plan it is: "the plan solved at the targets" (it missed in
	// simulation) or the relaxation it was solved at.
	Basis string `json:"basis"`
	// Summary is its GPUs and objective; Misses how far each target is from being met.
	Summary string   `json:"summary,omitempty"`
	Misses  []string `json:"misses,omitempty"`
}

// Relaxation is a knob's answer: the factor, what it does to each target, and the check.
type Relaxation struct {
	// Found says a factor within the bounds makes the solve succeed; None why not.
	Found bool    `json:"found"`
	None  string  `json:"none,omitempty"`
	Scale float64 `json:"scale,omitempty"`
	// Checked is the factor the check found infeasible (95% of an SLO factor; a rate
	// factor over 0.95, at most 1), and CheckedOK whether it was found so.
	Checked   float64 `json:"checked,omitempty"`
	CheckedOK bool    `json:"checked_infeasible"`
	// AtGiven says the check's factor reached the targets as given (whose failure is the
	// one explained), so no solve was spent on it.
	AtGiven bool `json:"check_at_given,omitempty"`
	// Narrowed is false where the search stopped (budget, time) before the tolerance: Scale
	// then is feasible but perhaps not the smallest.
	Narrowed bool         `json:"narrowed"`
	SLOs     []SLOTarget  `json:"slos,omitempty"`
	Rates    []RateTarget `json:"rates,omitempty"`
}

// SLOAlone is one SLO relaxed on its own: the target and its relaxation (Relaxation.SLOs
// holds the target at the stated factor).
type SLOAlone struct {
	Target SLOTarget   `json:"target"`
	Relax  *Relaxation `json:"relaxation"`
}

// GPUAdd is a number of GPUs of one type whose addition makes the SLOs as given feasible.
type GPUAdd struct {
	GPUOption
	// Add is the fewest GPUs that do; one fewer was solved and fails (Narrowed) unless the
	// search stopped first.
	Add      int  `json:"add"`
	Narrowed bool `json:"narrowed"`
	// PricePerHour is Add × the type's price (the cluster's, else the default list price),
	// in Currency; absent where the type has no price.
	PricePerHour *float64 `json:"price_per_hour,omitempty"`
	Currency     string   `json:"currency,omitempty"`
}

// ErrNoTime is an explanation given up for want of time: the deadline passed before the
// search could say anything (the failed command's --time-limit spent by its solve).
var ErrNoTime = errors.New("no time left for the explanation")

// errBudget stops a knob's search when the solves or the time run out.
var errBudget = errors.New("search budget spent")

// searcher runs probes within the budget.
type searcher struct {
	req      Request
	deadline time.Time
	max      int
	solves   int
	// knobEnd and knobMax are the current knob's share of the time and the solves.
	knobEnd time.Time
	knobMax int
	// cut is why the current knob stopped early ("" = it did not); cuts every such reason.
	cut  string
	cuts []string
	// knob names the probe under way, for Trace.
	knob string
}

// share starts the next of n knobs left: its share of the solves and the time left.
func (s *searcher) share(n int) {
	s.cut = ""
	s.knobMax = s.solves + max(1, (s.max-s.solves)/n)
	if !s.deadline.IsZero() {
		s.knobEnd = time.Now().Add(time.Until(s.deadline) / time.Duration(n))
	}
}

// stop records why the current knob stopped early and returns errBudget.
func (s *searcher) stop(why string) error {
	if s.cut == "" {
		s.cut = why
		if s.knob != "" {
			why = fmt.Sprintf("%s (at %s)", why, s.knob)
		}
		s.cuts = append(s.cuts, why)
	}
	return errBudget
}

// timeUp is the reason the time ran out, the knob's share or the whole limit.
func (s *searcher) timeUp() string {
	if time.Now().Before(s.deadline) {
		return fmt.Sprintf("its share of --time-limit %s passed", s.req.Limit)
	}
	return fmt.Sprintf("--time-limit %s passed", s.req.Limit)
}

func (s *searcher) probe(ctx context.Context, in planner.Inputs, st planner.Settings) (Outcome, error) {
	if s.knobMax == 0 {
		s.knobMax = s.max
	}
	if s.solves >= s.knobMax {
		return Outcome{}, s.stop(fmt.Sprintf("its share of the search's %d solves was spent", s.max))
	}
	if end := s.end(); !end.IsZero() && time.Now().After(end) {
		return Outcome{}, s.stop(s.timeUp())
	}
	s.solves++
	start := time.Now()
	out, err := s.run(ctx, in, st)
	if s.req.Trace != nil {
		s.req.Trace(fmt.Sprintf("solve %d: %s: feasible %v, refusal %v, error %v (%s)", s.solves, s.knob, out.Feasible, out.Refusal != nil, err, time.Since(start).Round(time.Millisecond)))
	}
	return out, err
}

// run is one probe, given up at the deadline: a planner that does not heed its context (a
// capacity search simulating) would otherwise hold the command past --time-limit. The probe's
// own context has no deadline (a solver that sees one returns its incumbent early, which
// would change the verdict); it is canceled when the probe is given up, and a planner that
// does not heed that runs on in the background until it returns, its verdict unused.
func (s *searcher) run(ctx context.Context, in planner.Inputs, st planner.Settings) (Outcome, error) {
	end := s.end()
	if end.IsZero() {
		return s.req.Probe(ctx, in, st)
	}
	pctx, cancel := context.WithCancel(ctx)
	type result struct {
		out Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := s.req.Probe(pctx, in, st)
		done <- result{out, err}
	}()
	timer := time.NewTimer(time.Until(end))
	defer timer.Stop()
	select {
	case r := <-done:
		cancel()
		return r.out, r.err
	case <-ctx.Done():
		cancel()
		return Outcome{}, ctx.Err()
	case <-timer.C:
		cancel()
		return Outcome{}, s.stop(s.timeUp())
	}
}

// end is when the current probe must stop: the knob's share of the time, at most the
// whole limit (zero: no limit).
func (s *searcher) end() time.Time {
	switch {
	case s.knobEnd.IsZero():
		return s.deadline
	case s.deadline.IsZero() || s.knobEnd.Before(s.deadline):
		return s.knobEnd
	}
	return s.deadline
}

// Explain searches the knobs for r's failure. It returns nil (and no error) where even the
// widest relaxation of every knob together fails and the failure is no refusal of a target
// (planner.ErrInfeasible): the inputs are then wrong in a way no target explains.
func Explain(ctx context.Context, r Request) (*Explanation, error) {
	s := &searcher{req: r, max: r.MaxProbes}
	if s.max <= 0 {
		s.max = DefaultMaxProbes
	}
	if r.Limit > 0 {
		s.deadline = time.Now().Add(r.Limit)
	}
	if !r.Deadline.IsZero() && (s.deadline.IsZero() || r.Deadline.Before(s.deadline)) {
		s.deadline = r.Deadline
	}
	if !s.deadline.IsZero() && !time.Now().Before(s.deadline) {
		return nil, fmt.Errorf("%w: --time-limit %s passed before it began", ErrNoTime, r.Limit)
	}
	ex := &Explanation{Tolerance: Tolerance, CheckShare: CheckShare}
	slos, err := SLOTargets(r.In, r.Settings)
	if err != nil {
		return nil, err
	}
	rates := RateTargets(r.In)
	gpus, skipped := GPUOptions(r.In.Cluster, r.Settings.Objective)

	// A refusal that names no target may be bad input no knob reaches: one probe with every
	// knob at its bound together decides (where even it fails, no knob alone helps).
	if !targetRefusal(r.Failure) {
		wide, err := s.widest(ctx, slos, rates, gpus)
		if errors.Is(err, errBudget) {
			// The one probe that decides whether any knob reaches the failure did not
			// finish: no explanation, and not "no knob explains it" either.
			return nil, fmt.Errorf("%w: %s", ErrNoTime, strings.Join(s.cuts, "; "))
		}
		if err != nil {
			return nil, err
		}
		if !wide {
			return nil, nil
		}
	}
	ex.Closest = closestOfFailure(r.Failure)

	// The knobs in turn, each with a fair share of what is left of the solves and the time
	// (what one leaves unspent goes to the next): the GPUs and the rates first, whose solves
	// run at the SLOs as given, then the SLOs, where an LLM planner's capacity search at a
	// relaxed SLO simulates longest.
	var ratePlan, sloPlan *formats.Plan
	knobs := []func() error{
		func() (err error) {
			ex.GPUs, ex.GPUsNone, err = s.gpuAdds(ctx, gpus, skipped)
			return err
		},
		func() error {
			if len(rates) == 0 {
				return nil
			}
			rel, plan, err := s.relax(ctx, "rates ÷", func(k float64) (planner.Inputs, planner.Settings, error) {
				return ScaleRates(r.In, 1/k), r.Settings, nil
			}, MaxScale, func(k float64) float64 { return 1 / roundDown3(1/k) })
			if err != nil {
				return err
			}
			if rel.Found {
				rel.Scale, rel.Checked = 1/rel.Scale, math.Min(1, 1/rel.Checked)
				for _, t := range rates {
					t.Relaxed = t.RateRPS * rel.Scale
					rel.Rates = append(rel.Rates, t)
				}
			} else if rel.None == "" {
				rel.None = fmt.Sprintf("no rate down to ×1/%d succeeds", MaxScale)
			} else {
				rel.None = strings.ReplaceAll(rel.None, "×", "÷")
			}
			ex.Rate, ratePlan = rel, plan
			return nil
		},
		func() error {
			if len(slos) == 0 {
				ex.SLO = &Relaxation{None: "no SLO field the explanation can scale (slo, ttft_slo, tpot_slo, latency_slo.latency, slo_scale, --slo)"}
				return nil
			}
			rel, plan, err := s.relax(ctx, "SLOs", func(k float64) (planner.Inputs, planner.Settings, error) {
				return ScaleSLOs(r.In, r.Settings, r.Secs, k)
			}, MaxScale, roundUp3)
			if err != nil {
				return err
			}
			if rel.Found {
				for _, t := range slos {
					t.Relaxed = t.relaxed(rel.Scale)
					rel.SLOs = append(rel.SLOs, t)
				}
			} else if rel.None == "" {
				rel.None = fmt.Sprintf("no SLO factor up to ×%d succeeds", MaxScale)
			}
			ex.SLO, sloPlan = rel, plan
			return nil
		},
	}
	if eachSLOSearched(slos, r.Settings) {
		knobs = append(knobs, func() (err error) {
			ex.EachSLO, ex.EachSLONote, err = s.eachSLO(ctx, slos, ex.SLO)
			return err
		})
		if r.MaxProbes <= 0 {
			s.max += eachSLOProbes * min(len(slos), MaxEachSLO)
		}
	}
	for i, knob := range knobs {
		s.share(len(knobs) - i)
		if err := knob(); err != nil {
			return nil, err
		}
	}
	switch {
	case ex.Closest.Summary != "":
	case sloPlan != nil:
		ex.Closest = Closest{Basis: fmt.Sprintf("the plan solved with every SLO ×%s", fmtScale(ex.SLO.Scale)), Summary: planSummary(sloPlan),
			Misses: []string{fmt.Sprintf("every target needs its SLO ×%s: %s", fmtScale(ex.SLO.Scale), describeSLOs(ex.SLO.SLOs))}}
	case ratePlan != nil:
		ex.Closest = Closest{Basis: fmt.Sprintf("the plan solved at the stated rates ×%s", fmtScale(ex.Rate.Scale)), Summary: planSummary(ratePlan)}
	default:
		ex.Closest.Basis = "no plan: the planner refused every target as given"
	}
	ex.Solves, ex.CutShort = s.solves, strings.Join(s.cuts, "; ")
	return ex, nil
}

// eachSLO relaxes each SLO on its own, the others as given, for a workload of two or more
// (--slo, which overrides the workload's, is one target): the targets of the applications
// the failed solve's plan misses first, at most MaxEachSLO, each with its share of what is
// left of the solves and the time. all is the every-SLO relaxation: where even it found no
// factor, none relaxed alone would, and none is searched.
func (s *searcher) eachSLO(ctx context.Context, slos []SLOTarget, all *Relaxation) ([]SLOAlone, string, error) {
	if all == nil || !all.Found {
		return nil, "not searched: no factor on every SLO together succeeds", nil
	}
	order := missedFirst(slos, s.req.Failure)
	var skipped []string
	if len(order) > MaxEachSLO {
		for _, t := range order[MaxEachSLO:] {
			skipped = append(skipped, t.who())
		}
		order = order[:MaxEachSLO]
	}
	var out []SLOAlone
	knobEnd, knobMax := s.knobEnd, s.knobMax
	for i, t := range order {
		// Each target's share of this knob's solves and time.
		s.cut = ""
		left := len(order) - i
		s.knobMax = s.solves + max(1, (knobMax-s.solves)/left)
		if !knobEnd.IsZero() {
			s.knobEnd = time.Now().Add(time.Until(knobEnd) / time.Duration(left))
		}
		rel, _, err := s.relax(ctx, t.who()+" alone", func(k float64) (planner.Inputs, planner.Settings, error) {
			return ScaleSLO(s.req.In, s.req.Settings, s.req.Secs, t.Path, k)
		}, MaxScale, roundUp3)
		if err != nil {
			return nil, "", err
		}
		if rel.Found {
			rt := t
			rt.Relaxed = t.relaxed(rel.Scale)
			rel.SLOs = []SLOTarget{rt}
		} else if rel.None == "" {
			rel.None = fmt.Sprintf("no factor on it alone up to ×%d succeeds: another target binds", MaxScale)
		}
		out = append(out, SLOAlone{Target: t, Relax: rel})
	}
	note := ""
	if len(skipped) > 0 {
		note = fmt.Sprintf("%d more not searched alone (at most %d are): %s", len(skipped), MaxEachSLO, strings.Join(skipped, ", "))
	}
	return out, note, nil
}

// eachSLOSearched says whether the SLOs are relaxed one at a time too: two or more, and no
// --slo (which overrides the workload's: one target).
func eachSLOSearched(slos []SLOTarget, st planner.Settings) bool {
	return len(slos) >= 2 && st.SLO == 0
}

// missedFirst orders the SLO targets with those of the applications the failed plan misses
// first, each group in the workload's order.
func missedFirst(slos []SLOTarget, f Outcome) []SLOTarget {
	missed := map[string]bool{}
	if f.Plan != nil && f.Plan.Prediction != nil {
		for _, a := range f.Plan.Prediction.Apps {
			if !a.Meets {
				missed[a.Name] = true
			}
		}
	}
	out := make([]SLOTarget, 0, len(slos))
	for _, first := range []bool{true, false} {
		for _, t := range slos {
			if (t.Name != "" && missed[t.Name]) == first {
				out = append(out, t)
			}
		}
	}
	return out
}

// widest reports whether the solve succeeds with every knob at its bound together.
func (s *searcher) widest(ctx context.Context, slos []SLOTarget, rates []RateTarget, gpus []GPUOption) (bool, error) {
	in, st := s.req.In, s.req.Settings
	var err error
	if len(slos) > 0 {
		if in, st, err = ScaleSLOs(in, st, s.req.Secs, MaxScale); err != nil {
			return false, err
		}
	}
	if len(rates) > 0 {
		in = ScaleRates(in, 1.0/MaxScale)
	}
	for _, g := range gpus {
		in = AddGPUs(in, g, g.Max)
	}
	s.knob = "every knob at its bound"
	out, err := s.probe(ctx, in, st)
	return out.Feasible, err
}

// relax finds the smallest factor k in (1, maxK] at which inputs(k) solve: doubling to a
// feasible bound, bisecting (geometrically) to Tolerance, rounding with round (to a factor
// at least as relaxed) and checking that the rounded factor succeeds and CheckShare of it
// fails. It returns the plan solved at the stated factor.
func (s *searcher) relax(ctx context.Context, name string, inputs func(k float64) (planner.Inputs, planner.Settings, error), maxK float64, round func(float64) float64) (*Relaxation, *formats.Plan, error) {
	rel := &Relaxation{}
	feasible := func(k float64) (bool, *formats.Plan, error) {
		in, st, err := inputs(k)
		s.knob = fmt.Sprintf("%s ×%.4g", name, k)
		if err != nil {
			return false, nil, err
		}
		out, err := s.probe(ctx, in, st)
		return out.Feasible, out.Plan, err
	}
	lo, hi := 1.0, 0.0
	var hiPlan *formats.Plan
	for k := 2.0; k <= maxK; k *= 2 {
		ok, p, err := feasible(k)
		if err != nil {
			if errors.Is(err, errBudget) {
				rel.None = fmt.Sprintf("the search stopped before a factor succeeded: %s", s.cut)
				if lo > 1 {
					rel.None += fmt.Sprintf("; up to ×%s fails", fmtScale(lo))
				}
			}
			return stopped(rel, err)
		}
		if ok {
			hi, hiPlan = k, p
			break
		}
		lo = k
	}
	if hi == 0 {
		return rel, nil, nil
	}
	rel.Found, rel.Scale = true, hi
	for bisect := true; ; bisect = false {
		for bisect && hi/lo > 1+Tolerance {
			mid := math.Sqrt(lo * hi)
			ok, p, err := feasible(mid)
			if err != nil {
				_, _, err = stopped(rel, err)
				return rel, hiPlan, err
			}
			if ok {
				hi, hiPlan = mid, p
			} else {
				lo = mid
			}
			rel.Scale = hi
		}
		// The stated factor: rounded to three digits, never below the bisected one, and
		// solved at once more where the rounding moved it.
		stated := hi
		if bisect {
			stated = math.Min(round(hi), maxK)
		}
		if stated != hi {
			ok, p, err := feasible(stated)
			if err != nil {
				_, _, err = stopped(rel, err)
				return rel, hiPlan, err
			}
			if !ok { // not monotone at this grain: state the bisected factor as solved
				stated = hi
			} else {
				hiPlan = p
			}
		}
		rel.Scale, rel.Narrowed = stated, true
		check := CheckShare * stated
		rel.Checked = check
		if check <= 1 { // the targets as given: the failure itself
			rel.CheckedOK, rel.AtGiven = true, true
			return rel, hiPlan, nil
		}
		ok, p, err := feasible(check)
		if err != nil {
			_, _, err = stopped(rel, err)
			return rel, hiPlan, err
		}
		if !ok {
			rel.CheckedOK = true
			return rel, hiPlan, nil
		}
		// Feasible at the check: the threshold lies lower than the bisection found
		// (feasibility is not monotone there, as a simulated verdict near its edge): state
		// the check's factor and check 95% of it in turn.
		hi, hiPlan = check, p
		lo = math.Min(lo, check)
	}
}

// stopped ends a knob's search at err: the budget leaves the relaxation as found so far
// (not narrowed), any other error is returned.
func stopped(rel *Relaxation, err error) (*Relaxation, *formats.Plan, error) {
	rel.Narrowed = false
	if errors.Is(err, errBudget) {
		return rel, nil, nil
	}
	return rel, nil, err
}

// gpuAdds finds, per GPU type, the fewest GPUs whose addition makes the targets as given
// feasible (doubling, then bisecting on integers: n succeeds and n−1 fails), cheapest first.
func (s *searcher) gpuAdds(ctx context.Context, opts []GPUOption, skipped []string) ([]GPUAdd, string, error) {
	var adds []GPUAdd
	var none, stoppedAt []string
	for _, o := range opts {
		feasible := func(n int) (bool, error) {
			s.knob = fmt.Sprintf("+%d %s", n, o.Type)
			out, err := s.probe(ctx, AddGPUs(s.req.In, o, n), s.req.Settings)
			return out.Feasible, err
		}
		lo, hi := 0, 0
		var err error
		for n := 1; ; n *= 2 {
			n = min(n, o.Max)
			var ok bool
			if ok, err = feasible(n); err != nil || ok {
				if ok {
					hi = n
				}
				break
			}
			lo = n
			if n == o.Max {
				break
			}
		}
		if err != nil && !errors.Is(err, errBudget) {
			return nil, "", err
		}
		if hi == 0 {
			switch {
			case err == nil:
				none = append(none, fmt.Sprintf("%s: no count up to +%d (%s %d → %d)", o.Type, o.Max, o.Field, o.Have, o.Have+o.Max))
			case lo > 0:
				stoppedAt = append(stoppedAt, fmt.Sprintf("%s: up to +%d fails, the search stopped there (%s)", o.Type, lo, s.cut))
			default:
				stoppedAt = append(stoppedAt, fmt.Sprintf("%s: not tried, the search stopped first (%s)", o.Type, s.cut))
			}
			continue
		}
		add := GPUAdd{GPUOption: o, Add: hi}
		for err == nil && hi-lo > 1 {
			mid := (lo + hi) / 2
			var ok bool
			if ok, err = feasible(mid); err == nil {
				if ok {
					hi = mid
				} else {
					lo = mid
				}
			}
		}
		if err != nil && !errors.Is(err, errBudget) {
			return nil, "", err
		}
		add.Add, add.Narrowed = hi, hi-lo == 1
		if price, _, perr := s.req.In.Cluster.Price(o.Type); perr == nil {
			total := price * float64(hi)
			add.PricePerHour, add.Currency = &total, s.req.In.Cluster.CurrencyOf()
		}
		adds = append(adds, add)
	}
	sortAdds(adds)
	if len(adds) == 0 {
		why := append(none, skipped...)
		if len(opts) == 0 && len(why) == 0 {
			why = []string{"the cluster has no GPU type to add to"}
		}
		if len(stoppedAt) > 0 {
			return nil, "none found: " + strings.Join(append(why, stoppedAt...), "; "), nil
		}
		return nil, "none would: " + strings.Join(why, "; "), nil
	}
	return adds, "", nil
}

// sortAdds orders the additions cheapest first (unpriced last), then by count.
func sortAdds(adds []GPUAdd) {
	cost := func(a GPUAdd) float64 {
		if a.PricePerHour == nil {
			return math.Inf(1)
		}
		return *a.PricePerHour
	}
	for i := 1; i < len(adds); i++ {
		for j := i; j > 0 && (cost(adds[j]) < cost(adds[j-1]) || cost(adds[j]) == cost(adds[j-1]) && adds[j].Add < adds[j-1].Add); j-- {
			adds[j], adds[j-1] = adds[j-1], adds[j]
		}
	}
}

// targetRefusal reports whether the failure is a target that cannot be met: a plan that
// missed in simulation, or a refusal that says so (planner.ErrInfeasible, or a problem of
// the inputs whose message names it, as the systems that point at the workload's field do).
func targetRefusal(f Outcome) bool {
	if f.Plan != nil {
		return true
	}
	return f.Refusal != nil && (errors.Is(f.Refusal, planner.ErrInfeasible) || strings.Contains(f.Refusal.Error(), planner.ErrInfeasible.Error()))
}

// closestOfFailure is the failed solve's own plan, where it returned one that missed.
func closestOfFailure(f Outcome) Closest {
	if f.Plan == nil {
		return Closest{}
	}
	c := Closest{Basis: "the plan solved at the targets as given (it misses in simulation)", Summary: planSummary(f.Plan)}
	if pr := f.Plan.Prediction; pr != nil {
		for _, a := range pr.Apps {
			if !a.Meets {
				c.Misses = append(c.Misses, fmt.Sprintf("%s: %.2f%% within its SLO at %.4g req/s, target %.0f%% (%.2f points short); it holds the target up to %.4g req/s",
					a.Name, 100*a.Attainment, a.RateRPS, 100*a.Target, 100*(a.Target-a.Attainment), a.SustainedRPS))
			}
		}
	}
	return c
}

// planSummary is a plan's GPUs by type and its objective.
func planSummary(p *formats.Plan) string {
	used := p.GPUsUsed()
	var parts []string
	for _, t := range sortedKeys(used) {
		parts = append(parts, fmt.Sprintf("%d %s", used[t], t))
	}
	gpus := "GPUs not counted by its sections"
	if used != nil {
		gpus = strings.Join(parts, " + ")
		if gpus == "" {
			gpus = "no GPU"
		}
	}
	return fmt.Sprintf("%s, objective %.4g (strategy %s)", gpus, p.Provenance.Objective, p.Provenance.Strategy)
}
