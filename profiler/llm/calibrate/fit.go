package calibrate

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/base/quantile"
)

// Factors are the three corrections of an LLM profile's iteration curves (LLM engine digest
// §2.4: a step's time is the prefill curve at its tokens when it computes prompt tokens, else
// the decode curve, plus the per-context-token term): every prefill point times
// PrefillScale, every decode point and the per-context-token term times DecodeScale, then
// StepOverheadUs added to every point of both curves.
type Factors struct {
	PrefillScale   float64
	DecodeScale    float64
	StepOverheadUs float64
}

// Identity leaves a profile as it is.
var Identity = Factors{PrefillScale: 1, DecodeScale: 1}

// Apply is p with its iteration curves corrected by f (a copy: p is unchanged). The planner's
// scalar times follow the curves (prefill_base_us and prefill_us_per_token by the prefill
// scale, decode_us_per_token by the decode scale, both plus the overhead, and the saturated
// throughput by the inverse of the decode step's change), so `plan solve` plans on the same
// engine `plan simulate` runs. A correction that leaves a point not > 0 is an error.
func Apply(p formats.LLMProfile, f Factors) (formats.LLMProfile, error) {
	it := p.Iteration
	if it == nil || len(it.Prefill) == 0 || len(it.Decode) == 0 {
		return p, fmt.Errorf("%s on %s: the profile has no iteration curves (iteration.prefill and iteration.decode) to correct", p.Model, p.GPU)
	}
	cp := *it
	cp.Prefill = scaled(it.Prefill, f.PrefillScale, f.StepOverheadUs)
	cp.Decode = scaled(it.Decode, f.DecodeScale, f.StepOverheadUs)
	cp.DecodeUsPerContextToken = it.DecodeUsPerContextToken * f.DecodeScale
	for _, c := range []struct {
		name string
		pts  []formats.PWLPoint
	}{{"prefill", cp.Prefill}, {"decode", cp.Decode}} {
		for i, pt := range c.pts {
			if !(pt.Us > 0) || math.IsInf(pt.Us, 0) {
				return p, fmt.Errorf("iteration.%s[%d].us: %g: the correction (%s) leaves a step time that is not > 0", c.name, i, pt.Us, f)
			}
		}
	}
	out := p
	out.Iteration = &cp
	if p.PrefillUsPerToken > 0 {
		out.PrefillBaseUs = round(max(p.PrefillBaseUs*f.PrefillScale+f.StepOverheadUs, 0))
		out.PrefillUsPerToken = round(p.PrefillUsPerToken * f.PrefillScale)
	}
	if d := p.DecodeUsPerToken; d > 0 {
		out.DecodeUsPerToken = round(max(d*f.DecodeScale+f.StepOverheadUs, d*f.DecodeScale/2))
		if p.ThroughputTokensPerS > 0 {
			out.ThroughputTokensPerS = round(p.ThroughputTokensPerS * d / out.DecodeUsPerToken)
		}
	}
	return out, nil
}

func (f Factors) String() string {
	return fmt.Sprintf("prefill ×%.3f, decode ×%.3f, %+.1f µs per step", f.PrefillScale, f.DecodeScale, f.StepOverheadUs)
}

func scaled(pts []formats.PWLPoint, k, add float64) []formats.PWLPoint {
	out := make([]formats.PWLPoint, len(pts))
	for i, pt := range pts {
		out[i] = formats.PWLPoint{Tokens: pt.Tokens, Us: round(pt.Us*k + add)}
	}
	return out
}

// round keeps a time to the ns, as the analytic profiles write theirs.
func round(v float64) float64 { return math.Round(v*1000) / 1000 }

// Timing is one request's replayed times after its arrival, in seconds; Done is false when
// the engine did not finish it (refused, or cut off).
type Timing struct {
	TTFT, E2E float64
	Done      bool
	// Preemptions is how often the engine preempted the request (its KV taken back).
	Preemptions int
}

// Simulator replays reqs (their arrivals, prompt and output tokens) once through one engine
// of p and returns each request's times, parallel to reqs. The caller's engine is the
// repository's (internal/run/replay.Records): this layer may not import it.
type Simulator func(p formats.LLMProfile, reqs []Request) ([]Timing, error)

// Options tune Fit.
type Options struct {
	// MaxReplays bounds the search's replays (0: DefaultMaxReplays).
	MaxReplays int
	// Progress, when set, is told after each replay how many have run.
	Progress func(replays int)
}

// DefaultMaxReplays bounds a fit's replays: the search converges in 50 to 120 on the
// synthetic round trips (TestRoundTrip, plan profile's TestCalibrateRuns).
const DefaultMaxReplays = 400

func (o Options) maxReplays() int {
	if o.MaxReplays <= 0 {
		return DefaultMaxReplays
	}
	return o.MaxReplays
}

// Result is a fit: the factors, the calibrated profile (corrected curves, Calibration
// filled) and the search's facts.
type Result struct {
	Factors Factors
	Profile formats.LLMProfile
	// Replays is how many replays the search ran.
	Replays int
	// AtBound names the factors that ended at an end of their range: the profile is far
	// from the run (another GPU, tensor-parallel degree or engine setting?) or the three
	// factors cannot express the difference.
	AtBound []string
	// Unfinished is how many requests the calibrated replay did not finish.
	Unfinished int
	// Searched is how many of the runs' requests the search replayed (each run's first
	// ones: at most MaxSearchRequests a run); the errors are the whole runs'.
	Searched int
	// Runs are each run's part of the fit (one for Fit).
	Runs []RunResult
	// Held says, for each factor held at 1, why (the runs do not constrain it); HeldFactors
	// names them (prefill_scale, decode_scale).
	Held        []string
	HeldFactors []string
	// overheadHeld, when set, says why the step overhead was held at 0 (a warning).
	overheadHeld string
	// Warnings say why the fit may not be trusted, each by name (Warning's names).
	Warnings []Warning
}

// minFit is the fewest successful requests Fit takes: one fitted, one held out.
const minFit = 2

// MinTrustedRequests is the fewest successful requests of a fit that can be trusted: half of
// them fitted makes 4 groups of minGroup prompt lengths (the TTFT objective's slope over
// prompt length is what tells the prefill scale from the per-step overhead) and the other
// half a held-out check of as many.
const MinTrustedRequests = 8 * minGroup

// MaxSearchRequests bounds the requests each of the search's replays runs (the run's first
// ones; of them the search fits those that finished before the first one left out was sent,
// searchedFit): a replay costs time in proportion to its requests and the search runs up to
// DefaultMaxReplays. The before and after errors are the whole run's replays.
const MaxSearchRequests = 1000

// searchedFit is how many of reqs' first requests the search may fit when its replays run
// only the first n: those that all finished, as measured, before the first request left out
// was sent. A request still running when later ones arrive shares its steps with them — it
// decodes beside them and waits through their prefills — so in a replay without them its
// TPOT comes out short (measured on a synthetic run of 10,000 requests at 20 a second: the
// first 1,000 replayed alone at the true factors, 3% short on average), and a fit on it
// would push the decode scale up to make up for the load left out. At least minFit.
func searchedFit(reqs []Request, n int) int {
	if n >= len(reqs) {
		return n
	}
	cut := math.Inf(1)
	for _, r := range reqs[n:] {
		cut = min(cut, r.Arrival)
	}
	k := 0
	for k < n && reqs[k].Arrival+reqs[k].E2E <= cut {
		k++
	}
	return max(k, minFit)
}

// nearBound is how close, relative to the end, a factor must come to its range's end for
// WarnNearBound.
const nearBound = 0.10

// heldOutSlack is how many percentage points a held-out error may rise by (replays of
// slightly different factors batch requests differently) before WarnHeldOutWorse.
const heldOutSlack = 0.5

// Fit corrects p's iteration curves to the measured run b: it replays all of b's requests
// (sim) for each candidate Factors — the later ones load the engine while the earlier ones
// run, as they did — and minimises, over the first half of the requests (by index, a
// deterministic split), the squared log-ratio of replayed to measured mean TTFT over groups of
// like prompt length and of each request's mean inter-token latency (TPOT) (objective):
// relative errors, so short and long requests weigh alike. The second half is held out: its errors, before and after, say
// whether the correction carries over to requests it was not fitted on. The search is
// deterministic (search.go): the scales in [MinCalibrationScale, MaxCalibrationScale],
// searched in log space, the overhead in [−half the smallest scaled point,
// MaxCalibrationOverheadUs]. A profile calibrated before is corrected again on top of its
// curves. The search replays at most the run's first MaxSearchRequests requests; the errors
// before and after are the whole run's. Result.Warnings name what makes the fit doubtful.
func Fit(p formats.LLMProfile, b *Bench, sim Simulator, opt Options) (*Result, error) {
	return FitRuns(p, []*Bench{b}, sim, opt)
}

// RunResult is one run's part of a fit: its requests, how many were fitted and searched,
// and its errors before and after.
type RunResult struct {
	Name                            string
	Requests, FitRequests, Searched int
	Fit, HeldOut                    formats.LLMCalibrationErrors
}

// FitRuns is Fit on several runs of one deployment at once (several loads, or several
// sessions): each run is replayed through its own engine, the loss is the mean of the runs'
// losses, and each run's first half is fitted and its second half held out, so each run's
// held-out error is reported (Result.Runs). A factor the runs do not constrain is held at 1
// and said so (Result.Held): the prefill scale when the fitted prompts span too little of
// the prefill curve to tell it from the per-step overhead, the decode scale when too few
// fitted requests have two or more output tokens.
func FitRuns(p formats.LLMProfile, runs []*Bench, sim Simulator, opt Options) (*Result, error) {
	if len(runs) == 0 {
		return nil, fmt.Errorf("calibrate: no run to fit")
	}
	if _, err := Apply(p, Identity); err != nil {
		return nil, err
	}
	s := &search{p: p, sim: sim, cache: map[Factors]*evaluation{}, progress: opt.Progress}
	s.minPrefill, s.minDecode = minUs(p.Iteration.Prefill), minUs(p.Iteration.Decode)
	for _, b := range runs {
		if len(b.Requests) < minFit {
			return nil, fmt.Errorf("%s: %d successful request(s): calibration needs at least %d (half fitted, half held out)", b.Name, len(b.Requests), minFit)
		}
		nFit := len(b.Requests) / 2
		searched := b.Requests
		if nFit > MaxSearchRequests {
			searched = b.Requests[:MaxSearchRequests]
		}
		pt := &part{reqs: searched, nFit: min(nFit, len(searched), searchedFit(b.Requests, len(searched)))}
		pt.obj = newObjective(searched[:pt.nFit])
		s.parts = append(s.parts, pt)
	}
	// full replays every run whole under f.
	full := func(f Factors) ([][]Timing, error) {
		e, err := s.eval(f)
		if err != nil {
			return nil, err
		}
		out := make([][]Timing, len(runs))
		for i, b := range runs {
			if len(s.parts[i].reqs) == len(b.Requests) {
				out[i] = e.t[i]
				continue
			}
			prof, err := Apply(p, f)
			if err != nil {
				return nil, err
			}
			if out[i], err = s.replay(prof, b.Requests); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	before, err := full(Identity)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	s.hold(runs, res)
	best, err := s.minimise(opt.maxReplays())
	if err != nil {
		return nil, err
	}
	// The record holds the factors rounded; the curves and the errors after are the rounded
	// factors'.
	best = Factors{round6(best.PrefillScale), round6(best.DecodeScale), round(best.StepOverheadUs)}
	if best.StepOverheadUs == 0 {
		best.StepOverheadUs = 0 // not −0
	}
	after, err := full(best)
	if err != nil {
		return nil, err
	}
	prof, err := Apply(p, best)
	if err != nil {
		return nil, err
	}
	var names []string
	var allReqs, fitReqs, heldReqs []Request
	var allAfter, fitBefore, fitAfter, heldBefore, heldAfter []Timing
	for i, b := range runs {
		nFit := len(b.Requests) / 2
		names = append(names, filepath.Base(b.Name))
		res.Runs = append(res.Runs, RunResult{Name: filepath.Base(b.Name), Requests: len(b.Requests), FitRequests: nFit, Searched: len(s.parts[i].reqs),
			Fit:     formats.LLMCalibrationErrors{Before: errorsOf(b.Requests[:nFit], before[i][:nFit]), After: errorsOf(b.Requests[:nFit], after[i][:nFit])},
			HeldOut: formats.LLMCalibrationErrors{Before: errorsOf(b.Requests[nFit:], before[i][nFit:]), After: errorsOf(b.Requests[nFit:], after[i][nFit:])}})
		allReqs, allAfter = append(allReqs, b.Requests...), append(allAfter, after[i]...)
		fitReqs, fitBefore, fitAfter = append(fitReqs, b.Requests[:nFit]...), append(fitBefore, before[i][:nFit]...), append(fitAfter, after[i][:nFit]...)
		heldReqs, heldBefore, heldAfter = append(heldReqs, b.Requests[nFit:]...), append(heldBefore, before[i][nFit:]...), append(heldAfter, after[i][nFit:]...)
		res.Searched += len(s.parts[i].reqs)
	}
	rec := &formats.LLMCalibration{
		Source: strings.Join(names, ", "), Format: Format, Requests: len(allReqs), FitRequests: len(fitReqs),
		PrefillScale: best.PrefillScale, DecodeScale: best.DecodeScale, StepOverheadUs: best.StepOverheadUs,
		Fit:       formats.LLMCalibrationErrors{Before: errorsOf(fitReqs, fitBefore), After: errorsOf(fitReqs, fitAfter)},
		HeldOut:   formats.LLMCalibrationErrors{Before: errorsOf(heldReqs, heldBefore), After: errorsOf(heldReqs, heldAfter)},
		HeldAtOne: res.HeldFactors,
	}
	if len(runs) > 1 {
		for _, r := range res.Runs {
			rec.Runs = append(rec.Runs, formats.LLMCalibrationRun{Source: r.Name, Requests: r.Requests, FitRequests: r.FitRequests, Fit: r.Fit, HeldOut: r.HeldOut})
		}
	}
	prof.Calibration = rec
	res.Factors, res.Profile, res.Replays = best, prof, s.replays
	res.warnings(s, best, runs, allReqs, allAfter, &prof)
	return res, nil
}

// warnings sets res's AtBound, Unfinished and Warnings.
func (res *Result) warnings(s *search, best Factors, runs []*Bench, reqs []Request, after []Timing, prof *formats.LLMProfile) {
	olo, ohi := s.overheadRange(best)
	for _, c := range []struct {
		name   string
		v, end float64
		low    bool
		held   bool
	}{
		{"prefill scale", best.PrefillScale, formats.MinCalibrationScale, true, s.fixed[0]}, {"prefill scale", best.PrefillScale, formats.MaxCalibrationScale, false, s.fixed[0]},
		{"decode scale", best.DecodeScale, formats.MinCalibrationScale, true, s.fixed[1]}, {"decode scale", best.DecodeScale, formats.MaxCalibrationScale, false, s.fixed[1]},
		{"step overhead", best.StepOverheadUs, ohi, false, false},
	} {
		if c.held {
			continue
		}
		if math.Abs(c.v-c.end) <= 1e-3*math.Abs(c.end) {
			res.AtBound = append(res.AtBound, fmt.Sprintf("%s %g", c.name, c.v))
		}
		if c.low && c.v <= c.end*(1+nearBound) || !c.low && c.v >= c.end*(1-nearBound) {
			res.warn(WarnNearBound, "%s %g is within %.0f%% of the end of its range (%g): the profile is far from the run (its GPU, tensor-parallel degree or engine settings?) or the factors cannot express the difference", c.name, c.v, 100*nearBound, c.end)
		}
	}
	if best.StepOverheadUs < 0 && best.StepOverheadUs <= olo*(1-nearBound) {
		res.warn(WarnNearBound, "step overhead %g µs is within %.0f%% of the end of its range (%g µs: half the smallest scaled step)", best.StepOverheadUs, 100*nearBound, olo)
	}
	if res.overheadHeld != "" {
		res.warn(WarnOverheadHeld, "%s", res.overheadHeld)
	}
	if best.StepOverheadUs < 0 {
		res.warn(WarnNegativeOverhead, "the per-step overhead fitted is %g µs: a step cannot cost less than its work; the scales absorbed a cost the run does not pin down (too few requests, or too little spread in batch sizes and prompt lengths?)", best.StepOverheadUs)
	}
	for _, b := range runs {
		if n := len(b.Requests); n < MinTrustedRequests {
			res.warn(WarnFewRequests, "%s: %d successful requests (%d fitted, %d held out): a fit needs at least %d to be trusted (%d fitted in %d groups of %d prompt lengths, as many held out)",
				filepath.Base(b.Name), n, n/2, n-n/2, MinTrustedRequests, MinTrustedRequests/2, MinTrustedRequests/2/minGroup, minGroup)
		}
	}
	for _, r := range res.Runs {
		h := r.HeldOut
		for _, m := range []struct {
			name          string
			before, after float64
		}{{"TTFT", h.Before.TTFTPct, h.After.TTFTPct}, {"ITL", h.Before.ITLPct, h.After.ITLPct}, {"E2E", h.Before.E2EPct, h.After.E2EPct}} {
			if m.after > m.before+heldOutSlack {
				res.warn(WarnHeldOutWorse, "%s: the held-out requests' median %s error rose from %.1f%% to %.1f%%: the correction does not carry over to requests it was not fitted on", r.Name, m.name, m.before, m.after)
			}
		}
	}
	for _, t := range after {
		if !t.Done {
			res.Unfinished++
		}
	}
	if res.Unfinished > 0 {
		res.warn(WarnUnfinished, "the calibrated engine did not finish %d of the runs' requests (refused or preempted for good: its KV capacity or engine settings are not the server's?)", res.Unfinished)
	}
	if w, ok := kvMismatch(reqs, after, prof); ok {
		res.Warnings = append(res.Warnings, w)
	}
}

func round6(v float64) float64 { return math.Round(v*1e6) / 1e6 }

func minUs(pts []formats.PWLPoint) float64 {
	m := math.Inf(1)
	for _, pt := range pts {
		m = min(m, pt.Us)
	}
	return m
}

// search holds the fit's replays, each Factors replayed once.
type search struct {
	p formats.LLMProfile
	// parts are the runs as the search replays them.
	parts                 []*part
	sim                   Simulator
	minPrefill, minDecode float64
	// fixed are the factors held at 1 (prefill scale, decode scale, overhead).
	fixed [3]bool
	// cScale is the search space's unit of overhead (search.go).
	cScale   float64
	cache    map[Factors]*evaluation
	replays  int
	progress func(int)
	// err is the first replay error: the search stops on it.
	err error
}

// part is one run as the search replays it: its first requests (at most MaxSearchRequests),
// the first nFit of them fitted and scored by obj.
type part struct {
	reqs []Request
	nFit int
	obj  *objective
}

// evaluation is one replay of every part: its timings, run by run, and the mean loss.
type evaluation struct {
	t    [][]Timing
	loss float64
}

// overheadRange is the overhead's range at f's scales: down to minus half the smallest scaled
// point (so every corrected point stays > 0), up to MaxCalibrationOverheadUs.
func (s *search) overheadRange(f Factors) (lo, hi float64) {
	lo = -0.5 * min(f.PrefillScale*s.minPrefill, f.DecodeScale*s.minDecode)
	return max(lo, -formats.MaxCalibrationOverheadUs), formats.MaxCalibrationOverheadUs
}

// feasible is f with its overhead moved into its range at f's scales.
func (s *search) feasible(f Factors) Factors {
	lo, hi := s.overheadRange(f)
	f.StepOverheadUs = min(max(f.StepOverheadUs, lo), hi)
	return f
}

// loss is f's fit loss (+Inf once a replay failed).
func (s *search) loss(f Factors) float64 {
	e, err := s.eval(f)
	if err != nil {
		if s.err == nil {
			s.err = err
		}
		return math.Inf(1)
	}
	return e.loss
}

// eval replays the runs under f (once per f) and scores their fitted halves.
func (s *search) eval(f Factors) (*evaluation, error) {
	if e, ok := s.cache[f]; ok {
		return e, nil
	}
	prof, err := Apply(s.p, f)
	if err != nil {
		return nil, err
	}
	e := &evaluation{}
	for _, pt := range s.parts {
		t, err := s.replay(prof, pt.reqs)
		if err != nil {
			return nil, err
		}
		e.t = append(e.t, t)
		e.loss += pt.obj.loss(t[:pt.nFit]) / float64(len(s.parts))
	}
	s.cache[f] = e
	return e, nil
}

// replay runs reqs once through the simulator, counting it.
func (s *search) replay(prof formats.LLMProfile, reqs []Request) ([]Timing, error) {
	t, err := s.sim(prof, reqs)
	if err != nil {
		return nil, err
	}
	if len(t) != len(reqs) {
		return nil, fmt.Errorf("calibrate: the replay returned %d timings for %d requests", len(t), len(reqs))
	}
	s.replays++
	if s.progress != nil {
		s.progress(s.replays)
	}
	return t, nil
}

// unfinishedLoss is the loss a request the replay did not finish adds: as a tenfold error
// of both its times.
var unfinishedLoss = 2 * math.Pow(math.Log(10), 2)

// objective scores a replay of the fitted requests: the mean squared log-ratio of replayed to
// measured mean TTFT over groups of requests of like prompt length, plus the mean squared
// log-ratio of each request's TPOT. TTFT by groups, not request by request: a replay whose
// steps fall a little earlier or later batches requests differently, which moves each
// request's TTFT by up to a step either way (LLM engine digest §2.5: measured on the
// synthetic round trip, 7% rms per request for a change of a µs in the overhead) and makes a
// per-request loss jump at the finest changes of the factors; a group's mean keeps the
// systematic error — the one the factors correct — and averages the phase out. Grouping by
// prompt length keeps the slope of prefill time over tokens, which tells the prefill scale
// from the per-step overhead. A TPOT is a mean over its request's steps already (under 1%
// rms of jitter on the same run), and request by request it keeps what each one decoded
// beside — the load and the prefill steps that interrupted it — which groups would average
// away.
type objective struct {
	reqs       []Request
	ttft, tpot [][]int
}

// maxGroups bounds the TTFT grouping; a group holds at least minGroup requests.
const (
	maxGroups = 12
	minGroup  = 8
)

func newObjective(reqs []Request) *objective {
	o := &objective{reqs: reqs}
	var byLen []int
	for i := range reqs {
		byLen = append(byLen, i)
		if m, ok := reqs[i].TPOT(); ok && m > 0 {
			o.tpot = append(o.tpot, []int{i})
		}
	}
	slices.SortStableFunc(byLen, func(a, b int) int { return reqs[a].PromptTokens - reqs[b].PromptTokens })
	o.ttft = groups(byLen)
	return o
}

// groups splits idx, in order, into min(maxGroups, len/minGroup) groups (at least one) of
// near-equal size.
func groups(idx []int) [][]int {
	if len(idx) == 0 {
		return nil
	}
	k := min(maxGroups, max(len(idx)/minGroup, 1))
	out := make([][]int, k)
	for g := range out {
		out[g] = idx[g*len(idx)/k : (g+1)*len(idx)/k]
	}
	return out
}

// loss is the objective of a replay t of o.reqs (parallel): the sum of its residuals'
// squares.
func (o *objective) loss(t []Timing) float64 {
	var l float64
	for _, r := range o.residuals(t) {
		l += r * r
	}
	return l
}

// residuals are the objective's terms for a replay t of o.reqs (parallel), each weighted so
// that their squares sum to the loss: the unfinished requests' share of unfinishedLoss, then
// each TTFT group's log-ratio of replayed to measured mean, then each TPOT group's. Their
// number is fixed by o (a group with nothing measured is 0).
func (o *objective) residuals(t []Timing) []float64 {
	var unfinished int
	for i := range o.reqs {
		if !t[i].Done {
			unfinished++
		}
	}
	out := make([]float64, 0, 1+len(o.ttft)+len(o.tpot))
	out = append(out, math.Sqrt(unfinishedLoss*float64(unfinished)/float64(max(len(o.reqs), 1))))
	for _, g := range []struct {
		groups [][]int
		sim    func(i int) float64
		meas   func(i int) float64
	}{
		{o.ttft, func(i int) float64 { return t[i].TTFT }, func(i int) float64 { return o.reqs[i].TTFT }},
		{o.tpot, func(i int) float64 { return (t[i].E2E - t[i].TTFT) / float64(o.reqs[i].OutputTokens-1) },
			func(i int) float64 { m, _ := o.reqs[i].TPOT(); return m }},
	} {
		start, n := len(out), 0
		for _, grp := range g.groups {
			var sim, meas float64
			for _, i := range grp {
				if t[i].Done {
					sim += g.sim(i)
					meas += g.meas(i)
				}
			}
			r := 0.0
			if meas > 0 {
				r = logRatio(sim, meas)
				n++
			}
			out = append(out, r)
		}
		if n > 0 {
			w := 1 / math.Sqrt(float64(n))
			for i := start; i < len(out); i++ {
				out[i] *= w
			}
		}
	}
	return out
}

// logRatio is ln(sim/meas), both floored at a µs (an engine's clock tick).
func logRatio(sim, meas float64) float64 { return math.Log(max(sim, 1e-6) / max(meas, 1e-6)) }

// errorsOf are the median absolute percentage errors of reqs' replayed TTFT, TPOT and E2E
// (requests the replay did not finish count as 100% off).
func errorsOf(reqs []Request, t []Timing) formats.LLMReplayError {
	var ttft, itl, e2e []float64
	ape := func(sim, meas float64) float64 { return 100 * math.Abs(sim-meas) / meas }
	for i := range reqs {
		r := &reqs[i]
		if !t[i].Done {
			ttft, e2e = append(ttft, 100), append(e2e, 100)
			if r.OutputTokens > 1 {
				itl = append(itl, 100)
			}
			continue
		}
		ttft = append(ttft, ape(t[i].TTFT, r.TTFT))
		e2e = append(e2e, ape(t[i].E2E, r.E2E))
		if m, ok := r.TPOT(); ok && m > 0 {
			itl = append(itl, ape((t[i].E2E-t[i].TTFT)/float64(r.OutputTokens-1), m))
		}
	}
	med := func(xs []float64) float64 { return math.Round(quantile.Of(xs, 50)*100) / 100 }
	return formats.LLMReplayError{TTFTPct: med(ttft), ITLPct: med(itl), E2EPct: med(e2e)}
}
