package formats

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// PredictionMethodSim is the one method a prediction has today: a seeded discrete-event
// simulation of the plan under its own runtime policy (package sim), at the plan's own rates.
const PredictionMethodSim = "simulation"

// MinBurstyCV and MaxBurstyCV bound a bursty (Gamma renewal) arrival process's coefficient
// of variation, wherever one is read (--arrivals, --trace, a plan's prediction.arrivals):
// the Gamma's shape is 1/CV², which overflows to +Inf for a CV near 1e-155 and leaves the
// generator's arithmetic undefined; below 0.01 (shape 10⁴) the gaps are constant to within
// 1% anyway.
const (
	MinBurstyCV = 0.01
	MaxBurstyCV = 100.0
)

// BurstyCVError says why cv is no bursty process's coefficient of variation ("" when it is).
func BurstyCVError(cv float64) string {
	if !(cv >= MinBurstyCV && cv <= MaxBurstyCV) {
		return fmt.Sprintf("the coefficient of variation must be a number in [%g, %g]", MinBurstyCV, MaxBurstyCV)
	}
	return ""
}

// The bases of a prediction's load factor 1 (Prediction.Basis).
const (
	PredictionBasisRates  = "workload rates"
	PredictionBasisStated = "stated throughput"
)

// Prediction is a plan's predicted outcome at its own rates (load factor 1: the workload's
// rates, or for a throughput plan the rates it states it serves): what `plan solve` measured
// by simulating the plan before writing it, and what `plan check` measures again. A verdict
// is a prediction that was checked: a plan whose prediction misses its target is written only
// with --accept-miss, and says so here (Meets false).
type Prediction struct {
	// Method is how it was predicted (PredictionMethodSim).
	Method string `json:"method"`
	// Basis says what load factor 1 is: PredictionBasisRates (the workload's rates, which the
	// plan was sized for: a miss there is an error) or PredictionBasisStated (a throughput
	// plan's planned rates, a capacity: a PPipe model's target_rps, a cascade's qps_max; a
	// miss there is reported with the rate each application does sustain, SustainedRPS,
	// which a PPipe plan states as its throughput_rps). The stored name predates that rule.
	Basis string `json:"basis"`
	// Policy is the runtime policy simulated (the plan's own).
	Policy string `json:"policy"`
	// Arrivals are the simulated arrival process ("poisson", "bursty:CV" or "mmpp": plan
	// solve --arrivals), Seed their seed and DurationS the simulated span in seconds (long
	// enough for every application's sampling error to be small beside 1 − Target).
	Arrivals  string  `json:"arrivals"`
	Seed      int64   `json:"seed"`
	DurationS float64 `json:"duration_s"`
	// Headroom is the highest load factor (× the plan's own rates) at which every application
	// still holds its target, found by doubling then bisecting (sim's limit search, capped at
	// HeadroomCap) and held in the replications at that load too; below 1 when the plan
	// misses at its own rates, 0 when it misses at every load tried.
	Headroom    float64 `json:"headroom"`
	HeadroomCap float64 `json:"headroom_cap"`
	// HeadroomSearch, present only where the headroom search stopped before it finished
	// (plan solve's --time-limit came first), says so: Headroom and every application's
	// SustainedRPS are then the loads established before it stopped, lower bounds of what a
	// complete search finds, and plan check runs a complete one. Absent: the search ran to
	// its end.
	HeadroomSearch *HeadroomSearch `json:"headroom_search,omitempty"`
	// Rule is the verdict rule that turned each application's runs into its Meets
	// (VerdictEveryRun; absent in plans written before it was recorded, which were judged
	// on their first run).
	Rule string `json:"rule,omitempty"`
	// Meets is true when every application meets its target at load 1.
	Meets bool `json:"meets"`
	// Apps are the per-application predictions, in the deployment's order.
	Apps []AppPrediction `json:"apps"`
}

// SearchStoppedDeadline is why a headroom search stopped early: the command's --time-limit.
const SearchStoppedDeadline = "time limit"

// HeadroomSearch is a headroom search that stopped before it finished.
type HeadroomSearch struct {
	// StoppedEarly is true: the search stopped before it finished (a complete search records
	// no HeadroomSearch).
	StoppedEarly bool `json:"stopped_early"`
	// Reason is why (SearchStoppedDeadline).
	Reason string `json:"reason"`
	// LoadsTried are the load factors it simulated (first runs), ascending.
	LoadsTried []float64 `json:"loads_tried"`
}

// validate checks a stopped search's record: stopped, with a reason and positive loads.
func (h *HeadroomSearch) validate(v *validator, p string) {
	if !h.StoppedEarly {
		v.add(field(p, "stopped_early"), h.StoppedEarly, "must be true (a search that finished records no headroom_search)")
	}
	if h.Reason != SearchStoppedDeadline {
		v.add(field(p, "reason"), h.Reason, "must be %q", SearchStoppedDeadline)
	}
	for i, l := range h.LoadsTried {
		if !(l > 0) || math.IsInf(l, 0) {
			v.add(idx(field(p, "loads_tried"), i), l, "must be a finite load factor > 0")
		}
	}
}

// AppPrediction is one application's (model, pipeline, cascade, LLM class, workflow app)
// predicted outcome at load 1.
type AppPrediction struct {
	Name string `json:"name"`
	// RateRPS is the simulated arrival rate (load 1) and Requests how many arrived.
	RateRPS  float64 `json:"rate_rps"`
	Requests int64   `json:"requests"`
	// Target is the share of requests the application must answer within its SLO: 0.99 (as
	// the PPipe and PARD papers score attainment), or the percentile its SLO is stated at (a
	// cascade's p95).
	Target float64 `json:"target"`
	// Attainment is the share answered within the SLO; Margin its sampling error at 95%
	// confidence: the larger of the binomial's (1.96·√(a(1−a)/n), at least 1/n) and 1.96 ×
	// the standard deviation over independent replications of the same span (misses come
	// in bursts, so runs scatter more than the binomial says): a re-run with another seed
	// lands within attainment ± margin about 19 times in 20.
	Attainment float64 `json:"attainment"`
	Margin     float64 `json:"margin"`
	// Dropped and Late count the requests that were dropped (shed by the policy) or answered
	// past the SLO.
	Dropped int64 `json:"dropped"`
	Late    int64 `json:"late"`
	// Latency percentiles of answered requests (end to end), milliseconds.
	P50Ms float64 `json:"p50_ms"`
	P90Ms float64 `json:"p90_ms"`
	P99Ms float64 `json:"p99_ms"`
	// TTFTP99Ms and TPOTP99Ms are an LLM class's time to first token and time per output
	// token at p99 (absent for other applications).
	TTFTP99Ms *float64 `json:"ttft_p99_ms,omitempty"`
	TPOTP99Ms *float64 `json:"tpot_p99_ms,omitempty"`
	// SLOs are an LLM class's SLOs each judged at its own percentile (slo_percentile,
	// ttft_percentile, tpot_percentile): the share of requests that met it (absent for
	// other applications).
	SLOs []PredictedSLO `json:"slos,omitempty"`
	// ExpectedError is an LLM class's expected-error band on the simulated means: how far
	// the real TTFT, TPOT and E2E means are expected to lie from the prediction's, from the
	// step model's errors on real runs it was not fitted on in the regime of the profile(s)
	// serving the class's model (the widest where several GPUs serve it). Absent for other
	// applications, and in plans written before it was recorded.
	ExpectedError *ExpectedError `json:"expected_error,omitempty"`
	// LatencyError is any other application's expected-error band on its p50 and p99
	// latency: the spread of the runs at load 1 (seeds) and the profile's measurement noise.
	// Absent for LLM classes (ExpectedError) and in plans written before it was recorded.
	LatencyError *LatencyError `json:"latency_error,omitempty"`
	// Runs are the runs at load 1 the verdict is taken on: the first (the one Attainment,
	// the counts, the percentiles and SLOs summarise) and its replications with other
	// arrival seeds.
	Runs []RunOutcome `json:"runs,omitempty"`
	// Meets is the verdict on Runs under the prediction's rule (AppMeets): every run holds
	// the target (each SLO of SLOs at its percentile where there are any, else Attainment ≥
	// Target).
	Meets bool `json:"meets"`
	// SustainedRPS is the highest rate (a load factor tried × RateRPS) at which this
	// application meets its target, and every lower load tried too, in the first run and in
	// each replication at that load: what a user (and an autoscaler) can size by.
	SustainedRPS float64 `json:"sustained_rps"`
}

// ErrorBand is where a real value is expected, in percent of the prediction: between
// prediction × (1 + LowerPct/100) and prediction × (1 + UpperPct/100); LowerPct ≤ 0 ≤
// UpperPct, asymmetric where the model is biased.
type ErrorBand struct {
	LowerPct float64 `json:"lower_pct"`
	UpperPct float64 `json:"upper_pct"`
}

// String is the band as text: "−a/+b%".
func (b ErrorBand) String() string {
	return fmt.Sprintf("−%.0f/+%.0f%%", math.Max(-b.LowerPct, 0), math.Max(b.UpperPct, 0))
}

// ExpectedError is an LLM class's expected-error bands on the means of its end-to-end
// latency, time to first token and time per output token (the decode step), and where they
// come from (the validation set's held-out errors in the profile's regime, or a
// calibration's held-out requests). They hold below saturation.
type ExpectedError struct {
	E2EMean  ErrorBand `json:"e2e_mean"`
	TTFTMean ErrorBand `json:"ttft_mean"`
	TPOTMean ErrorBand `json:"tpot_mean"`
	Basis    string    `json:"basis"`
}

// Widest is the band covering both e and o: the lower of their lower bounds and the higher
// of their upper bounds on each mean, with both bases where they differ. A class served on
// several GPUs is expected within the widest of their bands.
func (e ExpectedError) Widest(o ExpectedError) ExpectedError {
	w := func(a, b ErrorBand) ErrorBand {
		return ErrorBand{LowerPct: math.Min(a.LowerPct, b.LowerPct), UpperPct: math.Max(a.UpperPct, b.UpperPct)}
	}
	out := ExpectedError{E2EMean: w(e.E2EMean, o.E2EMean), TTFTMean: w(e.TTFTMean, o.TTFTMean), TPOTMean: w(e.TPOTMean, o.TPOTMean), Basis: e.Basis}
	if o.Basis != e.Basis && !slices.Contains(strings.Split(e.Basis, "; "), o.Basis) {
		out.Basis = e.Basis + "; " + o.Basis
	}
	return out
}

// validate checks the bands: finite, each with lower ≤ 0 ≤ upper, and a basis.
func (e *ExpectedError) validate(v *validator, p string) {
	for _, b := range []struct {
		name string
		band ErrorBand
	}{{"e2e_mean", e.E2EMean}, {"ttft_mean", e.TTFTMean}, {"tpot_mean", e.TPOTMean}} {
		b.band.validate(v, field(p, b.name))
	}
	if strings.TrimSpace(e.Basis) == "" {
		v.add(field(p, "basis"), e.Basis, "must say where the bands come from")
	}
}

// LatencyError is an application's expected-error bands on its simulated p50 and p99
// latency and where they come from.
type LatencyError struct {
	P50   ErrorBand `json:"p50"`
	P99   ErrorBand `json:"p99"`
	Basis string    `json:"basis"`
}

// validate checks the bands as ExpectedError's.
func (e *LatencyError) validate(v *validator, p string) {
	for _, b := range []struct {
		name string
		band ErrorBand
	}{{"p50", e.P50}, {"p99", e.P99}} {
		b.band.validate(v, field(p, b.name))
	}
	if strings.TrimSpace(e.Basis) == "" {
		v.add(field(p, "basis"), e.Basis, "must say where the bands come from")
	}
}

// validate checks one band: finite, lower ≤ 0 ≤ upper.
func (b ErrorBand) validate(v *validator, q string) {
	if !finite(b.LowerPct) || b.LowerPct > 0 {
		v.add(field(q, "lower_pct"), b.LowerPct, "must be a finite number <= 0")
	}
	if !finite(b.UpperPct) || b.UpperPct < 0 {
		v.add(field(q, "upper_pct"), b.UpperPct, "must be a finite number >= 0")
	}
}

// PredictedSLO is one SLO of an LLM class judged at its percentile.
type PredictedSLO struct {
	// SLO is slo (end to end), ttft_slo or tpot_slo; LimitMs its bound (TPOT: per token).
	SLO        string  `json:"slo"`
	LimitMs    float64 `json:"limit_ms"`
	Percentile float64 `json:"percentile"`
	// Share is the share of the class's requests that met it (dropped ones met none).
	Share float64 `json:"share"`
	Meets bool    `json:"meets"`
}

// validate checks a prediction on its own: shares in [0, 1], counts and times ≥ 0, Meets
// consistent with the numbers it summarises.
func (pr *Prediction) validate(v *validator, p string) {
	if pr.Method != PredictionMethodSim {
		v.add(field(p, "method"), pr.Method, "must be %s", PredictionMethodSim)
	}
	if pr.Basis != PredictionBasisRates && pr.Basis != PredictionBasisStated {
		v.add(field(p, "basis"), pr.Basis, "must be %q or %q", PredictionBasisRates, PredictionBasisStated)
	}
	if !(pr.DurationS > 0) || math.IsInf(pr.DurationS, 0) {
		v.add(field(p, "duration_s"), pr.DurationS, "must be > 0")
	}
	if arg, ok := strings.CutPrefix(pr.Arrivals, "bursty:"); ok {
		cv, err := strconv.ParseFloat(arg, 64)
		if err != nil {
			cv = math.NaN()
		}
		if why := BurstyCVError(cv); why != "" {
			v.add(field(p, "arrivals"), pr.Arrivals, "%s", why)
		}
	}
	nonNegative(v, field(p, "headroom"), pr.Headroom)
	nonNegative(v, field(p, "headroom_cap"), pr.HeadroomCap)
	if pr.HeadroomSearch != nil {
		pr.HeadroomSearch.validate(v, field(p, "headroom_search"))
	}
	if pr.Rule != "" && pr.Rule != VerdictEveryRun {
		v.add(field(p, "rule"), pr.Rule, "must be %q", VerdictEveryRun)
	}
	meets := len(pr.Apps) > 0
	for i, a := range pr.Apps {
		q := idx(field(p, "apps"), i)
		if a.Name == "" {
			v.add(field(q, "name"), a.Name, "must not be empty")
		}
		for _, x := range []struct {
			name string
			val  float64
		}{{"attainment", a.Attainment}, {"margin", a.Margin}} {
			if !(x.val >= 0 && x.val <= 1) {
				v.add(field(q, x.name), x.val, "must be in [0, 1]")
			}
		}
		for _, x := range []struct {
			name string
			val  float64
		}{{"rate_rps", a.RateRPS}, {"sustained_rps", a.SustainedRPS}, {"p50_ms", a.P50Ms}, {"p90_ms", a.P90Ms}, {"p99_ms", a.P99Ms}} {
			nonNegative(v, field(q, x.name), x.val)
		}
		if a.Requests < 0 || a.Dropped < 0 || a.Late < 0 || a.Dropped+a.Late > a.Requests {
			v.add(q, fmt.Sprintf("requests %d, dropped %d, late %d", a.Requests, a.Dropped, a.Late), "counts must be >= 0 and dropped + late <= requests")
		}
		if !(a.Target > 0 && a.Target < 1) {
			v.add(field(q, "target"), a.Target, "must be in (0, 1)")
		}
		for j, c := range a.SLOs {
			r := idx(field(q, "slos"), j)
			if !(c.Share >= 0 && c.Share <= 1) {
				v.add(field(r, "share"), c.Share, "must be in [0, 1]")
			}
			if c.Meets != (c.Share >= c.Percentile) {
				v.add(field(r, "meets"), c.Meets, "must say whether share %g >= percentile %g", c.Share, c.Percentile)
			}
		}
		if a.LatencyError != nil {
			a.LatencyError.validate(v, field(q, "latency_error"))
		}
		if a.ExpectedError != nil {
			a.ExpectedError.validate(v, field(q, "expected_error"))
		}
		validateRuns(v, q, &a)
		if want := AppMeets(&a); a.Meets != want {
			v.add(field(q, "meets"), a.Meets, "must be %t: %s", want, verdictWhy(&a))
		}
		meets = meets && a.Meets
	}
	if pr.Meets != meets {
		v.add(field(p, "meets"), pr.Meets, "must be true exactly when every application meets the target")
	}
}

// validateRuns checks an application's runs: each a share in [0, 1] of a count ≥ 0, an LLM
// class's with one share per SLO, and the first run the one the application's summary is of.
func validateRuns(v *validator, q string, a *AppPrediction) {
	for k, r := range a.Runs {
		rp := idx(field(q, "runs"), k)
		if !(r.Attainment >= 0 && r.Attainment <= 1) {
			v.add(field(rp, "attainment"), r.Attainment, "must be in [0, 1]")
		}
		if r.Requests < 0 {
			v.add(field(rp, "requests"), r.Requests, "must be >= 0")
		}
		if len(r.SLOShares) != len(a.SLOs) && (r.Requests > 0 || len(r.SLOShares) > 0) {
			v.add(field(rp, "slo_shares"), len(r.SLOShares), "must give one share per SLO of slos (%d)", len(a.SLOs))
		}
		for j, x := range r.SLOShares {
			if !(x >= 0 && x <= 1) {
				v.add(idx(field(rp, "slo_shares"), j), x, "must be in [0, 1]")
			}
		}
	}
	if len(a.Runs) > 0 && (a.Runs[0].Attainment != a.Attainment || a.Runs[0].Requests != a.Requests) {
		v.add(idx(field(q, "runs"), 0), fmt.Sprintf("attainment %g of %d requests", a.Runs[0].Attainment, a.Runs[0].Requests),
			"must be the run the application's summary is of (attainment %g of %d requests)", a.Attainment, a.Requests)
	}
}

// verdictWhy says why AppMeets decides as it does, for a validation error.
func verdictWhy(a *AppPrediction) string {
	if len(a.Runs) == 0 {
		if len(a.SLOs) > 0 {
			return "whether every SLO of slos is met"
		}
		return fmt.Sprintf("whether attainment %g >= target %g", a.Attainment, a.Target)
	}
	for k, r := range a.Runs {
		if !RunHolds(r, a.Target, a.SLOs) {
			return fmt.Sprintf("run %d (seed %d, attainment %g) misses target %g, and the rule %q needs every run to hold it", k, r.Seed, r.Attainment, a.Target, VerdictEveryRun)
		}
	}
	return fmt.Sprintf("every one of the %d runs holds target %g (rule %q)", len(a.Runs), a.Target, VerdictEveryRun)
}
