package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/base/gammarand"
)

// Source yields arrival times in non-decreasing order; dataplane.Never ends the stream.
type Source interface {
	Next() dataplane.Time
}

// ArrivalSpec describes an arrival process independent of its rate, so one spec serves every
// load point and application.
type ArrivalSpec struct {
	// Kind is poisson, bursty (Gamma renewal), mmpp (two-state Markov-modulated Poisson),
	// replay (per-request timestamps with the folding scaler) or counts (per-interval counts).
	Kind string
	// CV is the Gamma renewal's coefficient of variation (bursty; default 3).
	CV float64
	// MMPP parameters: rate multipliers and mean sojourn times of the high and low states
	// (defaults 2.5×/0.2 s and 0.625×/0.8 s: the mean rate is the target rate).
	HighMult, LowMult       float64
	HighSojourn, LowSojourn dataplane.Time
	// Trace holds the replayed timestamps or counts (replay, counts).
	Trace *formats.Trace
	// Name labels the spec in reports (the file name for traces).
	Name string
}

// ParseTraceFlag reads a --trace value: a generator name (poisson, bursty[:CV], mmpp) or
// the path of a Trace file, as `plan simulate` and `plan load` both accept it.
func ParseTraceFlag(s string) (ArrivalSpec, error) {
	switch name, _, _ := strings.Cut(s, ":"); name {
	case "poisson", "bursty", "mmpp":
		return ParseArrival(s)
	}
	return LoadTrace(s)
}

// ParseArrival parses the --trace value: poisson, bursty, bursty:CV, mmpp. File traces are
// loaded by the caller (LoadTrace) and passed as a replay/counts spec.
func ParseArrival(s string) (ArrivalSpec, error) {
	name, arg, hasArg := strings.Cut(s, ":")
	switch name {
	case "poisson":
		if hasArg {
			return ArrivalSpec{}, fmt.Errorf("--trace %q: poisson takes no parameter", s)
		}
		return ArrivalSpec{Kind: "poisson", Name: "poisson"}, nil
	case "bursty":
		cv := 3.0
		if hasArg {
			v, err := strconv.ParseFloat(arg, 64)
			if why := formats.BurstyCVError(v); err != nil || why != "" {
				return ArrivalSpec{}, fmt.Errorf("--trace %q: %s", s, formats.BurstyCVError(math.NaN()))
			}
			cv = v
		}
		return ArrivalSpec{Kind: "bursty", CV: cv, Name: fmt.Sprintf("bursty(cv=%g)", cv)}, nil
	case "mmpp":
		if hasArg {
			return ArrivalSpec{}, fmt.Errorf("--trace %q: mmpp takes no parameter", s)
		}
		return ArrivalSpec{Kind: "mmpp", Name: "mmpp"}, nil
	}
	return ArrivalSpec{}, fmt.Errorf("--trace %q: must be poisson, bursty[:CV], mmpp or a trace file", s)
}

// TraceSpec wraps a decoded trace file as an arrival spec.
func TraceSpec(name string, t *formats.Trace) (ArrivalSpec, error) {
	if t.Counts != nil {
		return ArrivalSpec{Kind: "counts", Trace: t, Name: name}, nil
	}
	if len(t.Requests) == 0 {
		return ArrivalSpec{}, fmt.Errorf("%s: requests: the trace is empty", name)
	}
	for i, r := range t.Requests {
		if r.TimeUs < 0 {
			return ArrivalSpec{}, fmt.Errorf("%s: requests[%d].t_us: %d: must be >= 0", name, i, r.TimeUs)
		}
		if i > 0 && r.TimeUs < t.Requests[i-1].TimeUs {
			return ArrivalSpec{}, fmt.Errorf("%s: requests[%d].t_us: %d: timestamps must be non-decreasing (previous %d)", name, i, r.TimeUs, t.Requests[i-1].TimeUs)
		}
	}
	return ArrivalSpec{Kind: "replay", Trace: t, Name: name}, nil
}

// New makes a source with mean rate rps for application app, seeded. Arrivals before horizon
// only matter; sources may stop early (dataplane.Never).
func (s ArrivalSpec) New(rps float64, app string, seed uint64) (Source, error) {
	if !(rps > 0) || math.IsInf(rps, 0) {
		return nil, fmt.Errorf("arrival rate %g for %s: must be > 0", rps, app)
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	mean := 1e6 / rps // µs
	switch s.Kind {
	case "poisson", "":
		return &renewal{rng: rng, gap: func(r *rand.Rand) float64 { return r.ExpFloat64() * mean }}, nil
	case "bursty":
		cv := s.CV
		if cv <= 0 {
			cv = 3
		}
		shape := 1 / (cv * cv)
		scale := mean * cv * cv
		return &renewal{rng: rng, gap: func(r *rand.Rand) float64 { return GammaSample(r, shape) * scale }}, nil
	case "mmpp":
		hm, lm := orDefault(s.HighMult, 2.5), orDefault(s.LowMult, 0.625)
		hs, ls := float64(s.HighSojourn), float64(s.LowSojourn)
		if hs <= 0 {
			hs = 0.2e6
		}
		if ls <= 0 {
			ls = 0.8e6
		}
		// Normalize so the stationary mean rate is rps whatever the multipliers.
		norm := (hm*hs + lm*ls) / (hs + ls)
		m := &mmpp{rng: rng, rate: [2]float64{hm * rps / norm / 1e6, lm * rps / norm / 1e6}, sojourn: [2]float64{hs, ls}}
		m.state = 1
		m.switchAt = rng.ExpFloat64() * ls
		return m, nil
	case "replay":
		return newReplay(s.Trace, app, rps, rng)
	case "counts":
		return newCounts(s.Trace.Counts, app, rps, rng)
	}
	return nil, fmt.Errorf("unknown arrival kind %q", s.Kind)
}

func orDefault(v, d float64) float64 {
	if v > 0 {
		return v
	}
	return d
}

// renewal is a renewal process with i.i.d. gaps; times accumulate in float µs so rounding
// does not bias the rate.
type renewal struct {
	rng *rand.Rand
	gap func(*rand.Rand) float64
	t   float64
}

func (r *renewal) Next() dataplane.Time {
	r.t += r.gap(r.rng)
	return dataplane.Time(r.t)
}

// GammaSample draws Gamma(shape, 1) (internal/base/gammarand). The arrival processes and `plan
// load`'s datasets share it.
func GammaSample(r *rand.Rand, shape float64) float64 { return gammarand.Sample(r, shape) }

// mmpp is a two-state Markov-modulated Poisson process (state 0 = bursty, 1 = quiet).
type mmpp struct {
	rng      *rand.Rand
	rate     [2]float64 // per µs
	sojourn  [2]float64 // mean µs
	state    int
	switchAt float64
	t        float64
}

func (m *mmpp) Next() dataplane.Time {
	for {
		gap := m.rng.ExpFloat64() / m.rate[m.state]
		if m.t+gap <= m.switchAt {
			m.t += gap
			return dataplane.Time(m.t)
		}
		// Memoryless: restart the exponential clock at the switch.
		m.t = m.switchAt
		m.state ^= 1
		m.switchAt = m.t + m.rng.ExpFloat64()*m.sojourn[m.state]
	}
}

// replay plays back a per-request trace scaled by folding: with span D and factor
// f = target/native rate, every timestamp maps to t mod (D/f); the folded times repeat with
// period D/f, so the rate is exactly the target.
type replay struct {
	times  []float64
	period float64
	i      int
	base   float64
}

func newReplay(t *formats.Trace, app string, rps float64, _ *rand.Rand) (Source, error) {
	var ts []float64
	for _, r := range t.Requests {
		if r.Target == "" || r.Target == app {
			ts = append(ts, float64(r.TimeUs))
		}
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("trace has no requests for %s", app)
	}
	first := ts[0]
	// With span D and native rate n/D, the factor is f = rps·D/n and the folding period
	// D/f = n/rps: independent of D, which also covers a trace whose requests share one
	// instant. A period longer than D (f < 1) replays the trace with a silent tail.
	period := float64(len(ts)) / rps * 1e6
	folded := make([]float64, len(ts))
	for i, x := range ts {
		folded[i] = math.Mod(x-first, period)
	}
	sort.Float64s(folded)
	return &replay{times: folded, period: period}, nil
}

func (r *replay) Next() dataplane.Time {
	if r.i == len(r.times) {
		r.i = 0
		r.base += r.period
	}
	t := r.base + r.times[r.i]
	r.i++
	return dataplane.Time(t)
}

// counts turns per-interval counts into a Poisson process with a piecewise-constant rate,
// scaled so the mean rate is the target, repeating the series.
type counts struct {
	rng      *rand.Rand
	rates    []float64 // per µs, per interval
	interval float64
	t        float64
}

func newCounts(c *formats.RateSeries, app string, rps float64, rng *rand.Rand) (Source, error) {
	if c.Target != "" && c.Target != app {
		return nil, fmt.Errorf("trace counts are for %s, not %s", c.Target, app)
	}
	var total int64
	for _, n := range c.Counts {
		total += n
	}
	iv := c.Interval.Microseconds()
	if total == 0 || iv <= 0 {
		return nil, fmt.Errorf("trace counts are all zero")
	}
	native := float64(total) / (iv * float64(len(c.Counts))) // per µs
	f := rps / 1e6 / native
	rates := make([]float64, len(c.Counts))
	for i, n := range c.Counts {
		rates[i] = float64(n) / iv * f
	}
	return &counts{rng: rng, rates: rates, interval: iv}, nil
}

func (c *counts) Next() dataplane.Time {
	for {
		k := int(c.t / c.interval)
		end := float64(k+1) * c.interval
		rate := c.rates[k%len(c.rates)]
		if rate > 0 {
			gap := c.rng.ExpFloat64() / rate
			if c.t+gap < end {
				c.t += gap
				return dataplane.Time(c.t)
			}
		}
		c.t = end
	}
}

// Times is a fixed list of arrival times (tests, hand-written scenarios).
type Times struct {
	T []dataplane.Time
	i int
}

// Next implements Source.
func (t *Times) Next() dataplane.Time {
	if t.i >= len(t.T) {
		return dataplane.Never
	}
	t.i++
	return t.T[t.i-1]
}

// DecodeTrace decodes a trace document (JSON or YAML) into an arrival spec, rejecting
// negative or decreasing timestamps with the offending index.
func DecodeTrace(name string, data []byte) (ArrivalSpec, error) {
	if t, ok, err := formats.ParseForeignTrace(name, data); ok {
		// The Azure LLM trace CSV and Mooncake JSONL import as they are.
		if err != nil {
			return ArrivalSpec{}, err
		}
		return TraceSpec(name, t)
	}
	t, err := formats.DecodeInto[*formats.Trace](name, data, nil)
	if err != nil {
		return ArrivalSpec{}, err
	}
	return TraceSpec(name, t)
}

// LoadTrace reads a trace file into an arrival spec: a Trace document, an Azure LLM trace
// CSV (detected by its header line, formats.AzureLLMHeader) or a Mooncake JSONL trace
// (detected by its fields; formats.ParseForeignTrace).
func LoadTrace(path string) (ArrivalSpec, error) {
	data, err := formats.ReadBytes(path)
	if err != nil {
		return ArrivalSpec{}, err
	}
	if t, ok, err := formats.ParseForeignTrace(path, data); ok {
		if err != nil {
			return ArrivalSpec{}, err
		}
		return TraceSpec(filepath.Base(path), t)
	}
	t, err := formats.DecodeInto[*formats.Trace](path, data, nil)
	if err != nil {
		return ArrivalSpec{}, err
	}
	return TraceSpec(filepath.Base(path), t)
}
