package predict

// The lever every system that sizes for the workload's rates shares: when the plan solved
// at those rates misses its target in simulation (Poisson arrivals at exactly the rate a
// plan was sized for queue past the SLO: the planners size for mean load), solve again for
// the rates times a margin, and keep the first plan that meets its targets at the rates as
// given. The plan records the margin (provenance.rate_margin), and `plan check --resolve`
// re-solves at it.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/planner/schedule"
	"github.com/plan-dev/plan/sim"
)

// rateMargins are the margins tried in turn, each solve a fresh one: past 2× the plan is
// not missing for want of headroom but for a reason a margin does not reach (a latency
// floor above the SLO, a cluster the planner already fills). The small steps come first
// because the first plan that meets is kept: a plan that misses by a fraction of a point
// needs a few percent more capacity, and a coarser next step buys more GPUs than that (an
// FP8 A100 fleet solved for 1.25× cost 104 USD/h where 1.05× met the targets at 85.72).
var rateMargins = []float64{1.05, 1.1, 1.15, 1.25, 1.5, 2}

// Solve solves in, predicts the plan under the arrival process arrivals (sim.PredictArrivals:
// "" is Poisson) and, where it misses at the workload's rates, tries rateMargins. It returns
// the first plan that meets its targets, or the plan solved at the rates as given with its
// miss. A plan's verdict at its rates decides whether it is kept, so only a kept plan's
// prediction runs the headroom search (sim.Prediction).
func Solve(ctx context.Context, reg *systems.Registry, pl planner.Planner, in planner.Inputs, settings planner.Settings, arrivals string, note func(string)) (*formats.Plan, error) {
	plan, started, err := Attempt(ctx, reg, pl, in, settings, arrivals, note)
	if err != nil {
		return nil, err
	}
	if settings.Status != nil {
		settings.Status("predicting: the rates the plan holds (headroom search)")
	}
	whole, err := started.CompleteBy(ctx, SearchDeadline(settings.Deadline))
	if err != nil {
		return nil, err
	}
	plan.Prediction = whole
	return plan, nil
}

// afterSearch is what a solve does after its headroom search: state the plan's throughput,
// validate and write it, print, exit (about 20 ms for the PPipe regression cases' plans,
// which embed profiles of 100 GPUs; the rest is slack for a loaded machine).
const afterSearch = 100 * time.Millisecond

// SearchDeadline is when the headroom search of a command that ends at deadline (zero:
// none) must end: afterSearch before it (sim.Prediction.CompleteBy).
func SearchDeadline(deadline time.Time) time.Time {
	if deadline.IsZero() {
		return deadline
	}
	return deadline.Add(-afterSearch)
}

// Attempt is Solve up to the verdict: the plan Solve keeps and its prediction started, whose
// Rates() is the verdict at the workload's rates, without the headroom search that
// completes it. A caller that only asks whether a solve would succeed (solve's explanation
// of an infeasible target, internal/run/solve/explain) stops here.
func Attempt(ctx context.Context, reg *systems.Registry, pl planner.Planner, in planner.Inputs, settings planner.Settings, arrivals string, note func(string)) (*formats.Plan, *sim.Prediction, error) {
	b := newBudget(ctx, settings.TimeLimit, now)
	b.by(settings.Deadline)
	return attempt(ctx, pl, in, settings, note, b, func(p *formats.Plan) (*sim.Prediction, *formats.Prediction, error) {
		// The runs at the rates end by the command's deadline, less what writing the plan
		// takes: --time-limit bounds the whole command (a plan its prediction has not
		// checked is not written).
		started, err := Start(ctx, reg, p, arrivals, SearchDeadline(settings.Deadline))
		if err != nil {
			return nil, nil, err
		}
		return started, started.Rates(), nil
	})
}

// attempt is Attempt with its budget and its prediction at the rates (predict: the
// prediction started and its verdict) given.
func attempt(ctx context.Context, pl planner.Planner, in planner.Inputs, settings planner.Settings, note func(string), b budget,
	predict func(*formats.Plan) (*sim.Prediction, *formats.Prediction, error)) (*formats.Plan, *sim.Prediction, error) {
	plan, err := pl.Solve(ctx, in, settings)
	if err != nil {
		return nil, nil, err
	}
	// The status line names the phase after the planner's: a prediction simulates for
	// seconds, the headroom search for longer, with no solver to report.
	status := func(s string) {
		if settings.Status != nil {
			settings.Status(s)
		}
	}
	status("predicting: simulating the plan at the workload's rates")
	t0 := b.now()
	first, pr, err := predict(plan)
	if err != nil {
		return nil, nil, err
	}
	b.measured(b.now().Sub(t0))
	if pr.Meets || pr.Basis != formats.PredictionBasisRates || in.Workload == nil {
		return plan, first, nil
	}
	settings.Progress = nil
	for i, k := range rateMargins {
		limit, ok := b.share(len(rateMargins) - i)
		if !ok {
			note(fmt.Sprintf("the plan misses its target at the workload's rates in simulation (%s); no time is left within --time-limit %s to solve for %.3g× the rates", worstMiss(pr), settings.TimeLimit, k))
			return plan, first, nil
		}
		note(fmt.Sprintf("the plan misses its target at the workload's rates in simulation (%s); solving for %.3g× the rates", worstMiss(pr), k))
		status(fmt.Sprintf("solving for %.3g× the rates", k))
		rs := settings
		if limit > 0 {
			rs.TimeLimit = limit
		}
		scaled, err := scaleWorkload(in.Workload, k)
		if err != nil {
			return nil, nil, err
		}
		sin := in
		sin.Workload = scaled
		p, err := pl.Solve(ctx, sin, rs)
		if err != nil {
			// The cluster does not carry the margin: the plan at the rates stands, missing.
			note(fmt.Sprintf("no plan at %.3g× the rates: %v", k, err))
			return plan, first, nil
		}
		if err := unscaleEmbedded(p, k, plan.Provenance.Embedded); err != nil {
			return nil, nil, err
		}
		if limit > 0 {
			// The plan records the --time-limit the command was given, not the share of it
			// left for this re-solve (a wall-clock reading): the same inputs write the same
			// bytes, and `plan check --resolve` re-solves under the user's limit.
			p.Provenance.Options = recordedTimeLimit(p.Provenance.Options, settings.TimeLimit)
		}
		status(fmt.Sprintf("predicting the plan solved for %.3g× the rates", k))
		started, spr, err := predict(p)
		if errors.Is(err, sim.ErrPredictionDeadline) {
			// The limit ended this check: the plan at the rates stands, with its miss.
			note(fmt.Sprintf("the plan solved for %.3g× the rates could not be checked within --time-limit %s", k, settings.TimeLimit))
			return plan, first, nil
		}
		if err != nil {
			return nil, nil, err
		}
		if pr = spr; pr.Meets {
			return p, started, nil
		}
	}
	return plan, first, nil
}

// now is the clock the re-solves' budget reads (a test's own).
var now = time.Now

// minResolve is the least time limit a re-solve at a margin is started with: below it a
// planner (a MILP with its prediction's reserve) finds no plan worth predicting.
const minResolve = 500 * time.Millisecond

// budget is what is left of --time-limit for the re-solves at a margin: the limit bounds
// the whole command (the solve at the rates, its prediction, the re-solves and theirs), so
// each re-solve is given a share of what remains, less the prediction that follows it, not
// a limit of its own.
type budget struct {
	deadline time.Time // zero: no limit (a caller without one)
	now      func() time.Time
	// predict is the wall time a re-solved plan's prediction is expected to take: the
	// first plan's, as measured, times predictionGrowth (0 until measured).
	predict time.Duration
}

// predictionGrowth is how much longer than the first plan's verdict at its rates (its
// load-1 run and replications, what attempt measures) a re-solved plan's prediction may
// take: the same verdict, then, for the plan kept, the headroom search (Solve), whose runs
// came to 1.3–8× the verdict's on the PPipe regression cases under two busy cores.
const predictionGrowth = 8

// by moves the budget's deadline to d where d is set and earlier (the command's,
// planner.Settings.Deadline).
func (b *budget) by(d time.Time) {
	if !d.IsZero() && (b.deadline.IsZero() || d.Before(b.deadline)) {
		b.deadline = d
	}
}

// measured records the wall time the first plan's verdict took: each re-solve then leaves
// its own prediction predictionGrowth times that.
func (b *budget) measured(d time.Duration) { b.predict = predictionGrowth * max(d, 0) }

// newBudget starts the budget of a command limited to limit (≤ 0: none) now, or to ctx's
// deadline where that is earlier.
func newBudget(ctx context.Context, limit time.Duration, clock func() time.Time) budget {
	b := budget{now: clock}
	if limit > 0 {
		b.deadline = clock().Add(limit)
	}
	if d, ok := ctx.Deadline(); ok && (b.deadline.IsZero() || d.Before(b.deadline)) {
		b.deadline = d
	}
	return b
}

// share is the time limit of the next re-solve when left re-solves (this one included) may
// still run: an equal share of the time remaining less the re-solved plan's own prediction
// (b.predict), which a re-solve that ends early passes on to the next. ok is false when
// less than minResolve remains for it; limit is 0 when there is no deadline (the caller's
// limit stands).
func (b budget) share(left int) (limit time.Duration, ok bool) {
	if b.deadline.IsZero() {
		return 0, true
	}
	rem := b.deadline.Sub(b.now()) - b.predict
	if rem < minResolve {
		return 0, false
	}
	return max(rem/time.Duration(max(left, 1)), minResolve), true
}

// worstMiss names the application furthest below its target.
func worstMiss(pr *formats.Prediction) string {
	worst := worstApp(pr)
	if worst < 0 {
		return "no application"
	}
	a := pr.Apps[worst]
	if a.Attainment >= a.Target {
		return fmt.Sprintf("%s %.2f%% ± %.2f, below %.0f%% in a replication", a.Name, 100*a.Attainment, 100*a.Margin, 100*a.Target)
	}
	return fmt.Sprintf("%s %.2f%% < %.0f%%", a.Name, 100*a.Attainment, 100*a.Target)
}

// RatedTargets are the workload's applications that state a rate, and their rates, as
// their sections say (formats.RateTargeter).
func RatedTargets(w *formats.Workload) (names []string, rates []float64) {
	for _, t := range w.RateTargets() {
		if t.RateRPS > 0 {
			names, rates = append(names, t.Name), append(rates, t.RateRPS)
		}
	}
	return names, rates
}

// scaleWorkload is w with every stated rate times k.
func scaleWorkload(w *formats.Workload, k float64) (*formats.Workload, error) {
	names, rates := RatedTargets(w)
	for i := range rates {
		rates[i] *= k
	}
	return schedule.WithRates(w, names, rates)
}

// unscaleEmbedded puts the workload as given (asIs, embedded by the solve at the rates as
// given) back into a plan solved at k× its rates, with its input digest, and records k.
func unscaleEmbedded(p *formats.Plan, k float64, asIs *formats.EmbeddedInputs) error {
	e := p.Provenance.Embedded
	if e == nil || asIs == nil {
		return fmt.Errorf("a plan solved at %.3g× the rates embeds no inputs", k)
	}
	emb := *e
	emb.Workload = asIs.Workload
	d, err := planner.InputDigest(&emb)
	if err != nil {
		return err
	}
	p.Provenance.Embedded, p.Provenance.InputDigest, p.Provenance.RateMargin = &emb, d, k
	return nil
}

// ResolveAtMargin is a checker's re-solve of a plan solved at a rate margin: at the same
// margin, with the workload as given put back.
func ResolveAtMargin(ctx context.Context, ck planner.Checker, plan *formats.Plan, limit time.Duration) (*formats.Plan, error) {
	plan = withSpotShare(plan)
	k, e := plan.Provenance.RateMargin, plan.Provenance.Embedded
	if k <= 1 || e == nil || e.Workload == nil {
		return ck.Resolve(ctx, plan, limit)
	}
	scaled, err := scaleWorkload(e.Workload, k)
	if err != nil {
		return nil, err
	}
	c := *plan
	emb := *e
	emb.Workload = scaled
	c.Provenance.Embedded = &emb
	re, err := ck.Resolve(ctx, &c, limit)
	if err != nil {
		return nil, err
	}
	return re, unscaleEmbedded(re, k, e)
}

// withSpotShare gives a plan solved with --spot (fleet.spot_share) its share back on the
// embedded cluster a re-solve prices, which no file carries (formats.Cluster.SpotShare): the
// re-solve then optimises the cost the plan records. Other plans come back as they are.
func withSpotShare(plan *formats.Plan) *formats.Plan {
	e := plan.Provenance.Embedded
	if plan.Fleet == nil || plan.Fleet.SpotShare == nil || e == nil || e.Cluster == nil {
		return plan
	}
	c, emb, cl := *plan, *e, *e.Cluster
	share := *plan.Fleet.SpotShare
	cl.SpotShare = &share
	emb.Cluster = &cl
	c.Provenance.Embedded = &emb
	return &c
}

// recordedTimeLimit returns options with its time_limit (if it has one, as a duration
// string) set to limit, every other byte as it was.
func recordedTimeLimit(options json.RawMessage, limit time.Duration) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(options, &m) != nil {
		return options
	}
	v, ok := m["time_limit"]
	if !ok || len(v) == 0 || v[0] != '"' {
		return options
	}
	want, _ := json.Marshal(limit.String())
	return bytes.Replace(options, append([]byte(`"time_limit":`), v...), append([]byte(`"time_limit":`), want...), 1)
}
