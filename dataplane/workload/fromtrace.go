package workload

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
)

// FromTraceOptions say how a trace becomes a workload (FromTrace).
type FromTraceOptions struct {
	// Name is the workload's metadata name ("" = "from-trace").
	Name string
	// Model names the model of requests whose trace entry names none (target) — the Azure
	// CSVs name none; "" = such requests are an error.
	Model string
	// Window is the span over which the peak rate is measured (0 = one minute): the most
	// arrivals in any window starting at a multiple of it, per second.
	Window time.Duration
	// Basis is the rate written as rate_rps: "peak" (the default: capacity is planned for
	// the busiest window, as PPipe's and QLM's target rates are) or "mean".
	Basis string
	// SLO is the end-to-end SLO of every LLM class (0 = suggested from Profiles).
	SLO time.Duration
	// SLOScale multiplies the unloaded latency of a class's p99 request into its suggested
	// SLOs (0 = planner's default, 5: PPipe's SLO rule, T = 5 × the batch-1 latency).
	SLOScale float64
	// Profiles are the LLM profiles suggested SLOs are computed from (the fastest profile of
	// each class's model).
	Profiles []formats.LLMProfile
}

// ClassSummary is what FromTrace measured of one class or model of the trace.
type ClassSummary struct {
	Name, Model string
	Requests    int
	// MeanRPS is requests over the trace's span; PeakRPS the busiest window's rate.
	MeanRPS, PeakRPS float64
	// Token length percentiles (nearest rank) of LLM requests; zero for DNN requests.
	InP50, InP90, InP99, OutP50, OutP90, OutP99 int
	// PrefixTokens is the mean prompt tokens a request finds cached (prefixHits: an engine
	// with prefix caching and room for every block), written as the class's prefix_tokens.
	PrefixTokens int
	// SLOFrom says where the class's SLOs came from ("--slo", "profile <gpu>", or "" for a
	// DNN model, whose SLO is the planner's scale rule).
	SLOFrom string
}

// ErrUnclassifiable is returned when a trace holds nothing a workload can be built from.
var ErrUnclassifiable = errors.New("cannot build a workload from this trace")

// FromTrace builds the workload a trace describes: one LLM class per trace class (or target,
// when requests carry no class) for requests with token counts, else one model per target,
// each with its rate (peak or mean) and, for LLM classes, the token-length mix and an SLO
// (given, or suggested from the profile). path names the trace in errors. The caller
// validates the workload with the systems' sections before writing it.
func FromTrace(path string, tr *formats.Trace, o FromTraceOptions) (*formats.Workload, []ClassSummary, error) {
	if o.Window <= 0 {
		o.Window = time.Minute
	}
	if o.SLOScale <= 0 {
		o.SLOScale = 5
	}
	switch o.Basis {
	case "":
		o.Basis = "peak"
	case "peak", "mean":
	default:
		return nil, nil, fmt.Errorf("--rate %q: must be peak or mean", o.Basis)
	}
	name := o.Name
	if name == "" {
		name = "from-trace"
	}
	w := &formats.Workload{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: "Workload"},
		Metadata: formats.Metadata{Name: name}}
	var sums []ClassSummary
	var err error
	switch {
	case tr.Counts != nil && len(tr.Requests) == 0:
		sums, err = fromCounts(path, tr.Counts, o, w)
	case len(tr.Requests) > 0:
		sums, err = fromRequests(path, tr.Requests, tr.HashBlockTokens, o, w)
	default:
		err = fmt.Errorf("%s: requests: empty: %w (no requests and no counts)", path, ErrUnclassifiable)
	}
	if err != nil {
		return nil, nil, err
	}
	w.Metadata.Description = describe(path, o, sums)
	return w, sums, nil
}

// fromCounts: a counts series is one model's arrivals per interval.
func fromCounts(path string, c *formats.RateSeries, o FromTraceOptions, w *formats.Workload) ([]ClassSummary, error) {
	iv := c.Interval.D().Seconds()
	if iv <= 0 || len(c.Counts) == 0 {
		return nil, fmt.Errorf("%s: counts.interval: %v: %w (no time base)", path, c.Interval.D(), ErrUnclassifiable)
	}
	model := c.Target
	if model == "" {
		model = o.Model
	}
	if model == "" {
		return nil, fmt.Errorf("%s: counts.target: empty: the series names no model; give --model", path)
	}
	var total, peak int64
	for _, n := range c.Counts {
		total += n
		peak = max(peak, n)
	}
	s := ClassSummary{Name: model, Model: model, Requests: int(total),
		MeanRPS: float64(total) / (iv * float64(len(c.Counts))), PeakRPS: float64(peak) / iv}
	if total == 0 {
		return nil, fmt.Errorf("%s: counts: all 0: %w (no arrivals)", path, ErrUnclassifiable)
	}
	ppipesec.SetModels(w, append(ppipesec.ModelsOf(w), ppipesec.ModelWorkload{Name: model, RateRPS: round3(rateOf(s, o.Basis))}))
	return []ClassSummary{s}, nil
}

// group is one class's requests.
type group struct {
	name, model string
	times       []int64
	in, out     []int
	hit         int // prompt tokens found cached, summed (prefixHits)
}

func fromRequests(path string, reqs []formats.TraceRequest, blockTokens int, o FromTraceOptions, w *formats.Workload) ([]ClassSummary, error) {
	first, last := reqs[0].TimeUs, reqs[len(reqs)-1].TimeUs
	span := float64(last-first) / 1e6
	if len(reqs) > 1 && span <= 0 {
		return nil, fmt.Errorf("%s: requests[].t_us: all %d: %w (no timestamps: a rate needs arrivals spread in time)", path, first, ErrUnclassifiable)
	}
	llm, dnn := 0, 0
	for _, r := range reqs {
		if r.InputTokens > 0 || r.OutputTokens > 0 {
			llm++
		} else {
			dnn++
		}
	}
	if llm > 0 && dnn > 0 {
		return nil, fmt.Errorf("%s: requests[].input_tokens: %d of %d requests carry token counts and %d do not: %w (LLM and DNN requests mixed)", path, llm, len(reqs), dnn, ErrUnclassifiable)
	}
	hits := prefixHits(reqs, blockTokens)
	byName := map[string]*group{}
	var order []string
	for i, r := range reqs {
		model := r.Target
		if model == "" {
			model = o.Model
		}
		if model == "" {
			return nil, fmt.Errorf("%s: requests[%d].target: empty: the request names no model; give --model", path, i)
		}
		name := r.Class
		if name == "" {
			name = model
		}
		g := byName[name]
		if g == nil {
			g = &group{name: name, model: model}
			byName[name] = g
			order = append(order, name)
		} else if g.model != model {
			return nil, fmt.Errorf("%s: requests[%d].target: %q: class %q already targets %q", path, i, model, name, g.model)
		}
		g.times = append(g.times, r.TimeUs)
		if llm > 0 {
			if r.InputTokens <= 0 || r.OutputTokens <= 0 {
				return nil, fmt.Errorf("%s: requests[%d]: input_tokens %d, output_tokens %d: an LLM request needs both", path, i, r.InputTokens, r.OutputTokens)
			}
			g.in = append(g.in, r.InputTokens)
			g.out = append(g.out, r.OutputTokens)
			g.hit += hits[i]
		}
	}
	if span <= 0 {
		span = 1 // one request: a rate of one per second is as good a guess as any
	}
	var sums []ClassSummary
	for _, name := range order {
		g := byName[name]
		s := ClassSummary{Name: g.name, Model: g.model, Requests: len(g.times),
			MeanRPS: float64(len(g.times)) / span, PeakRPS: peakRate(g.times, first, o.Window, span)}
		if llm == 0 {
			ppipesec.SetModels(w, append(ppipesec.ModelsOf(w), ppipesec.ModelWorkload{Name: g.model, RateRPS: round3(rateOf(s, o.Basis))}))
			sums = append(sums, s)
			continue
		}
		in, out := append([]int(nil), g.in...), append([]int(nil), g.out...)
		sort.Ints(in)
		sort.Ints(out)
		s.InP50, s.InP90, s.InP99 = rank(in, 0.5), rank(in, 0.9), rank(in, 0.99)
		s.OutP50, s.OutP90, s.OutP99 = rank(out, 0.5), rank(out, 0.9), rank(out, 0.99)
		s.PrefixTokens = int(math.Round(float64(g.hit) / float64(len(g.in))))
		c := llmspec.LLMClass{Name: g.name, Model: g.model, RateRPS: round3(rateOf(s, o.Basis)),
			InputTokens: tokenProfile(in), OutputTokens: tokenProfile(out), PrefixTokens: s.PrefixTokens}
		if err := suggestSLO(path, &c, &s, o); err != nil {
			return nil, err
		}
		llmspec.SetClasses(w, append(llmspec.ClassesOf(w), c))
		sums = append(sums, s)
	}
	return sums, nil
}

// suggestSLO sets a class's SLOs: --slo as given, else o.SLOScale × the unloaded latency of
// its p99 request on the fastest profile of its model (prefill of the p99 prompt, then the
// p99 output's decode steps at the profile's step time) and, for TTFT, o.SLOScale × that
// prefill.
func suggestSLO(path string, c *llmspec.LLMClass, s *ClassSummary, o FromTraceOptions) error {
	if o.SLO > 0 {
		c.SLO = formats.Duration(o.SLO)
		s.SLOFrom = "--slo"
		return nil
	}
	var best *formats.LLMProfile
	bestUs := math.Inf(1)
	for i := range o.Profiles {
		p := &o.Profiles[i]
		if p.Model != c.Model {
			continue
		}
		if us := e2eUs(p, s.InP99, s.OutP99); us < bestUs {
			best, bestUs = p, us
		}
	}
	if best == nil {
		return fmt.Errorf("%s: class %q: model %q: no SLO to suggest: give --slo, or --profile with an LLM profile of %s", path, c.Name, c.Model, c.Model)
	}
	c.SLO = formats.Duration(roundUp(time.Duration(o.SLOScale * bestUs * float64(time.Microsecond))))
	c.TTFTSLO = formats.Duration(roundUp(time.Duration(o.SLOScale * prefillUs(best, s.InP99) * float64(time.Microsecond))))
	s.SLOFrom = fmt.Sprintf("%g× the p99 request unloaded on %s", o.SLOScale, best.GPU)
	return nil
}

func prefillUs(p *formats.LLMProfile, tokens int) float64 {
	return p.PrefillBaseUs + p.PrefillUsPerToken*float64(tokens)
}

func e2eUs(p *formats.LLMProfile, in, out int) float64 {
	return prefillUs(p, in) + float64(max(out-1, 0))*p.DecodeUsPerToken
}

// roundUp rounds a suggested SLO up to two significant digits (1.234 s → 1.3 s), so that
// the file reads as a person would write it.
func roundUp(d time.Duration) time.Duration {
	if d <= 0 {
		return time.Millisecond
	}
	step := time.Duration(math.Pow(10, math.Floor(math.Log10(float64(d)))-1))
	step = max(step, time.Millisecond)
	return (d + step - 1) / step * step
}

// peakRate is the most arrivals in one window (windows start at the trace's first arrival),
// per second; a trace shorter than the window has its mean as its peak.
func peakRate(times []int64, first int64, win time.Duration, span float64) float64 {
	ws := win.Seconds()
	if span < ws {
		return float64(len(times)) / span
	}
	counts := map[int64]int{}
	most := 0
	for _, t := range times {
		k := (t - first) / win.Microseconds()
		counts[k]++
		most = max(most, counts[k])
	}
	return float64(most) / ws
}

// rank is the nearest-rank q-quantile of sorted xs: the smallest value with at least q of
// the samples at or below it.
func rank(xs []int, q float64) int {
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

func tokenProfile(sorted []int) llmspec.TokenProfile {
	var sum, sq float64
	for _, x := range sorted {
		sum += float64(x)
	}
	mean := sum / float64(len(sorted))
	for _, x := range sorted {
		sq += (float64(x) - mean) * (float64(x) - mean)
	}
	return llmspec.TokenProfile{Mean: round3(mean), Std: round3(math.Sqrt(sq / float64(len(sorted)))), Max: sorted[len(sorted)-1]}
}

func rateOf(s ClassSummary, basis string) float64 {
	if basis == "mean" {
		return s.MeanRPS
	}
	return s.PeakRPS
}

// round3 keeps three significant digits.
func round3(x float64) float64 {
	if x == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 3, 64), 64)
	return v
}

// rate3 writes a rate to three significant digits in plain notation (1000, not 1e+03).
func rate3(x float64) string { return strconv.FormatFloat(round3(x), 'f', -1, 64) }

// describe is the workload's description: where its numbers came from.
func describe(path string, o FromTraceOptions, sums []ClassSummary) string {
	d := fmt.Sprintf("built by plan workload from-trace from %s: rate_rps is each class's %s rate", path, o.Basis)
	if o.Basis == "peak" {
		d += fmt.Sprintf(" (busiest %v window)", o.Window)
	}
	for _, s := range sums {
		d += fmt.Sprintf("; %s: %d requests, mean %s/s, peak %s/s", s.Name, s.Requests, rate3(s.MeanRPS), rate3(s.PeakRPS))
		if s.InP50 > 0 {
			d += fmt.Sprintf(", input p50/p90/p99 %d/%d/%d, output %d/%d/%d tokens", s.InP50, s.InP90, s.InP99, s.OutP50, s.OutP90, s.OutP99)
		}
		if s.PrefixTokens > 0 {
			d += fmt.Sprintf(", %d prompt tokens cached per request on average (prefix_tokens: what earlier prompts share with each, were every block kept)", s.PrefixTokens)
		}
		if s.SLOFrom != "" {
			d += ", SLO from " + s.SLOFrom
		}
	}
	return d
}

// ReadTraceDoc reads a trace file as a Trace document: an Azure LLM inference CSV, a Mooncake
// JSONL trace (formats.ParseForeignTrace) or a plan Trace (JSON or YAML) — the files
// LoadTrace replays.
func ReadTraceDoc(path string) (*formats.Trace, error) {
	data, err := formats.ReadBytes(path)
	if err != nil {
		return nil, err
	}
	if t, ok, err := formats.ParseForeignTrace(path, data); ok {
		return t, err
	}
	return formats.DecodeInto[*formats.Trace](path, data, nil)
}
