// Package calibrate fits an LLM profile to a measured run of the real engine: it reads the
// per-request timings a benchmark client recorded against a vLLM server (`vllm bench serve
// --save-result --save-detailed`, or `plan load`'s file of the same keys), replays the run's
// requests through one simulated engine of the profile (a Simulator the caller hands in: the
// repository's engine, internal/run/replay) and corrects the profile's iteration curves by
// three factors — a prefill scale, a decode scale and a per-step overhead — until the replay's
// TTFT and inter-token latency match the measured ones (LLM engine digest §5: fidelity is
// judged by replaying the real deployment's requests through one instance with its engine
// settings and profile, and comparing each request's TTFT and E2E). The first half of the
// requests is fitted and the second half held out; both errors, before and after, are recorded
// in the profile (formats.LLMCalibration).
package calibrate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/jsonx"
	"github.com/plan-dev/plan/internal/base/gammarand"
)

// Format is the kind of measured run ReadBenchResult reads (formats.LLMCalibration.Format).
const Format = "vllm-bench"

// Request is one successful request of a measured run: when it was sent, its tokens and the
// timings the client measured (seconds).
type Request struct {
	// Index is the request's position in the file's per-request arrays.
	Index int
	// Arrival is when the client sent it, in seconds from the first request sent.
	Arrival                    float64
	PromptTokens, OutputTokens int
	// TTFT is the time to its first token; Gaps how many gaps its stream had between later
	// chunks and MaxGap the longest (a preempted request's stream stalls while it waits and
	// recomputes); E2E the time to its last token (the file's e2els where given, else TTFT
	// plus the gaps, as vLLM's client measures its latency).
	TTFT   float64
	Gaps   int
	MaxGap float64
	E2E    float64
}

// TPOT is the request's mean inter-token latency, (E2E − TTFT) / (output tokens − 1) as
// vLLM's client computes it (calculate_metrics): a stream that bundles tokens into one chunk
// keeps its mean. ok is false for a request of one output token (none).
func (r *Request) TPOT() (float64, bool) {
	if r.OutputTokens < 2 {
		return 0, false
	}
	return (r.E2E - r.TTFT) / float64(r.OutputTokens-1), true
}

// Bench is a measured run: its successful requests in the file's order and what it says of
// the load.
type Bench struct {
	// Name is the file's name, for errors and the calibration record.
	Name string
	// Model is the run's model_id ("" when not given).
	Model string
	// Requests are the successful requests, in the file's order; Failed counts the ones
	// left out (an error recorded, or no token received).
	Requests []Request
	Failed   int
	// RequestRate is the run's request_rate (+Inf: vLLM's "inf", every request at once);
	// Burstiness the gamma shape of its gaps; MaxConcurrency its client's concurrency cap
	// (0: none).
	RequestRate    float64
	Burstiness     float64
	MaxConcurrency int
	// Arrivals says where the arrival times come from: the file's start_times, or
	// regenerated from request_rate and burstiness (vLLM's result files before start_times
	// record no send times).
	Arrivals string
}

// maxSeconds bounds every time of a run, and its span: the engine clock's bound on any
// duration (formats.MaxDuration, 365 days).
var maxSeconds = formats.MaxDuration.Seconds()

// ReadOptions bound what ReadBenchResult accepts and how it fills in arrivals.
type ReadOptions struct {
	// MaxModelLen is the most prompt + output tokens of one request the engine accepts (0:
	// unchecked): vLLM refuses longer requests (HTTP 400, LLM engine digest §4), so a run
	// that served one was not run on this engine. LimitFrom says where it comes from, for
	// the error.
	MaxModelLen int
	LimitFrom   string
	// Seed seeds the regenerated arrivals of a file without start_times.
	Seed uint64
	// Context, when set, stops the read once done (SIGINT, SIGTERM): it is checked before
	// and after decoding and every few thousand requests.
	Context context.Context
}

// benchFile is the part of a vllm bench result the calibration reads (vLLM's
// vllm/benchmarks/serve.py, main_async and benchmark: the traffic keys and, with
// --save-detailed, one entry per request in send order); every other key is ignored.
type benchFile struct {
	ModelID        *string   `json:"model_id"`
	RequestRate    *num      `json:"request_rate"`
	Burstiness     *num      `json:"burstiness"`
	MaxConcurrency *num      `json:"max_concurrency"`
	RampUp         *string   `json:"ramp_up_strategy"`
	RampUpStart    *num      `json:"ramp_up_start_rps"`
	RampUpEnd      *num      `json:"ramp_up_end_rps"`
	Completed      *num      `json:"completed"`
	InputLens      numList   `json:"input_lens"`
	OutputLens     numList   `json:"output_lens"`
	TTFTs          numList   `json:"ttfts"`
	ITLs           itlTable  `json:"itls"`
	Errors         errorList `json:"errors"`
	// StartTimes are the clients' send times (time.perf_counter() seconds, newer vLLM and
	// plan load) and E2Els the latencies (plan load).
	StartTimes numList `json:"start_times"`
	E2Els      numList `json:"e2els"`
}

// num is a JSON number as Python's json module writes one: a number, or the bare NaN,
// Infinity and -Infinity it writes for floats that are not finite (and the "inf" string
// vLLM writes for an infinite request_rate). raw keeps the text for errors.
type num struct {
	v    float64
	raw  string
	null bool
	// quoted says raw was a JSON string (or a bare NaN or Infinity, which pythonLiterals
	// quotes).
	quoted bool
}

func (n *num) UnmarshalJSON(b []byte) error {
	n.raw = string(b)
	if string(b) == "null" {
		n.null = true
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		n.raw, n.quoted = s, true
		switch strings.ToLower(s) {
		case "inf", "infinity", "+inf":
			n.v = math.Inf(1)
		case "-inf", "-infinity":
			n.v = math.Inf(-1)
		case "nan":
			n.v = math.NaN()
		default:
			n.v = math.NaN() // not a number: the field's check names it
		}
		return nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		v = math.NaN() // not a number (an object, an array, true): the field's check names it
	}
	n.v = v // out of range: ±Inf, which the field's check refuses
	return nil
}

// String is the value as the file wrote it: a number or Python's NaN and Infinity as they
// are, anything else quoted (and cut, jsonx.Quote).
func (n num) String() string {
	switch l := strings.ToLower(n.raw); {
	case n.null:
		return "null"
	case n.quoted && (l == "nan" || strings.TrimLeft(l, "+-") == "infinity"):
		return n.raw
	case !n.quoted && len(n.raw) <= 40 && !math.IsNaN(n.v):
		return n.raw
	}
	return jsonx.Quote(n.raw)
}

// ReadBenchResult reads a `vllm bench serve --save-result --save-detailed` result (or `plan
// load`'s, which writes the same keys): its successful requests with their tokens and
// measured timings, and their arrival times — the file's start_times where given, else
// regenerated as vLLM's client scheduled them (request_rate, burstiness, ramp-up, with
// max_concurrency's cap replayed on the measured latencies). It is strict on what the fit
// reads — an error names the file, the field (with its index) and the value — and ignores
// every other key (summary statistics such as std_ttft_ms, which vLLM writes as NaN for a
// run of one request). A request with an error recorded is left out and counted; one
// without must have at least one output token, at most output tokens − 1 gaps and finite
// times >= 0. A file of more than MaxBytes, or more than MaxRequests requests, is refused.
func ReadBenchResult(name string, data []byte, opt ReadOptions) (*Bench, error) {
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("%s: %d bytes: a run file holds at most %d bytes (calibrate on a sample of the run)", name, len(data), MaxBytes)
	}
	if err := opt.interrupted(name); err != nil {
		return nil, err
	}
	var f benchFile
	if err := jsonx.Decode(pythonLiterals(data), &f, jsonx.Options{}); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := opt.interrupted(name); err != nil {
		return nil, err
	}
	bad := func(field string, v any, rule string, args ...any) error {
		return fmt.Errorf("%s: %s: %v: %s", name, field, v, fmt.Sprintf(rule, args...))
	}
	n := f.TTFTs.len()
	for _, a := range []struct {
		field string
		n     int
	}{{"ttfts", n}, {"input_lens", f.InputLens.len()}, {"output_lens", f.OutputLens.len()}, {"itls", f.ITLs.n},
		{"errors", f.Errors.n}, {"start_times", f.StartTimes.len()}, {"e2els", f.E2Els.len()}} {
		if a.n > MaxRequests {
			return nil, fmt.Errorf("%s: %s: more than %d entries: a run holds at most %d requests (the fit replays it a few hundred times): calibrate on a sample of the run", name, a.field, MaxRequests, MaxRequests)
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("%s: ttfts: missing or empty: the result holds no per-request timings (run vllm bench serve with --save-result --save-detailed)", name)
	}
	if f.ITLs.n == 0 {
		return nil, fmt.Errorf("%s: itls: missing or empty: the result holds no per-request inter-token latencies (run vllm bench serve with --save-detailed)", name)
	}
	for _, a := range []struct {
		field string
		n     int
		given bool
	}{
		{"input_lens", f.InputLens.len(), true}, {"output_lens", f.OutputLens.len(), true}, {"itls", f.ITLs.n, true},
		{"errors", f.Errors.n, f.Errors.given}, {"start_times", f.StartTimes.len(), f.StartTimes.given}, {"e2els", f.E2Els.len(), f.E2Els.given},
	} {
		if a.given && a.n != n {
			return nil, fmt.Errorf("%s: %s: %d entries: ttfts has %d (one entry per request)", name, a.field, a.n, n)
		}
	}
	b := &Bench{Name: name, RequestRate: math.Inf(1), Burstiness: 1}
	if f.ModelID != nil {
		b.Model = *f.ModelID
	}
	if err := b.traffic(&f, bad); err != nil {
		return nil, err
	}
	whole := func(field string, x num, lo int) (int, error) {
		if x.null || !(x.v >= float64(lo)) || x.v != math.Trunc(x.v) || x.v > math.MaxInt32 {
			return 0, bad(field, x, "must be a whole number of tokens >= %d", lo)
		}
		return int(x.v), nil
	}
	seconds := func(field string, x num) error {
		if x.null || !(x.v >= 0 && x.v <= maxSeconds) {
			return bad(field, x, "must be a time in [0, %g] seconds", maxSeconds)
		}
		return nil
	}
	failed := make([]bool, n)
	for i := 0; i < n; i++ {
		if i%4096 == 4095 {
			if err := opt.interrupted(name); err != nil {
				return nil, err
			}
		}
		at := func(field string) string { return fmt.Sprintf("%s[%d]", field, i) }
		if f.Errors.given && f.Errors.failed[i] {
			failed[i] = true
			continue
		}
		out, err := whole(at("output_lens"), f.OutputLens.at(i), 0)
		if err != nil {
			return nil, err
		}
		if out == 0 {
			return nil, bad(at("output_lens"), 0, "a request that succeeded (no error recorded) has at least one output token (a failed one has its error in errors[%d], and is left out)", i)
		}
		in, err := whole(at("input_lens"), f.InputLens.at(i), 1)
		if err != nil {
			return nil, err
		}
		if opt.MaxModelLen > 0 && in+out > opt.MaxModelLen {
			return nil, bad(fmt.Sprintf("input_lens[%d] + output_lens[%d]", i, i), in+out,
				"more tokens than the engine's max_model_len %d (%s): vLLM refuses such a request, so this run did not run on this engine", opt.MaxModelLen, opt.LimitFrom)
		}
		if err := seconds(at("ttfts"), f.TTFTs.at(i)); err != nil {
			return nil, err
		}
		r := Request{Index: i, PromptTokens: in, OutputTokens: out, TTFT: f.TTFTs.v[i]}
		if r.TTFT == 0 {
			return nil, bad(at("ttfts"), f.TTFTs.at(i), "a successful request's time to first token is > 0 (0: the endpoint did not stream, and the run has no per-request timings)")
		}
		row := f.ITLs.rows[i]
		if row.badCol >= 0 {
			if err := seconds(fmt.Sprintf("itls[%d][%d]", i, row.badCol), row.bad); err != nil {
				return nil, err
			}
		}
		if row.n > out-1 {
			return nil, bad(at("itls"), fmt.Sprintf("%d gaps", row.n), "output_lens[%d] is %d: a stream of %d tokens has at most %d gaps between its chunks", i, out, out, out-1)
		}
		r.Gaps, r.MaxGap, r.E2E = row.n, row.max, r.TTFT+row.sum
		if f.E2Els.given {
			if err := seconds(at("e2els"), f.E2Els.at(i)); err != nil {
				return nil, err
			}
			if e := f.E2Els.v[i]; e < r.TTFT {
				return nil, bad(at("e2els"), f.E2Els.at(i), "must be >= ttfts[%d] (%g s): a request ends after its first token", i, r.TTFT)
			} else {
				r.E2E = e
			}
		}
		if !(r.E2E <= maxSeconds) {
			return nil, bad(at("itls"), fmt.Sprintf("%d gaps", row.n), "ttfts[%d] plus the gaps is %g s: a request lasts at most %g s", i, r.E2E, maxSeconds)
		}
		b.Requests = append(b.Requests, r)
	}
	b.Failed = n - len(b.Requests)
	if f.Completed != nil && f.Errors.given {
		ok := n - b.Failed
		if c := f.Completed; c.null || c.v != float64(ok) {
			return nil, bad("completed", *c, "errors records %d successful requests (an empty error each)", ok)
		}
	}
	if len(b.Requests) == 0 {
		return nil, fmt.Errorf("%s: errors: all %d requests failed (each has its error recorded): nothing to calibrate on", name, n)
	}
	if err := b.arrivals(&f, failed, opt.Seed, bad); err != nil {
		return nil, err
	}
	return b, nil
}

// interrupted is the error of a read whose context is done (SIGINT, SIGTERM), else nil.
func (o ReadOptions) interrupted(name string) error {
	if o.Context == nil {
		return nil
	}
	if err := o.Context.Err(); err != nil {
		return fmt.Errorf("%s: interrupted while reading: %w", name, err)
	}
	return nil
}

// traffic reads and checks the run's traffic keys: request_rate (> 0, or "inf"), burstiness
// (> 0, default 1), max_concurrency (null or >= 1) and the ramp-up (vLLM's
// _get_current_request_rate: linear or exponential from start to end rps).
func (b *Bench) traffic(f *benchFile, bad func(string, any, string, ...any) error) error {
	if r := f.RequestRate; r != nil {
		if r.null || !(r.v > 0) {
			return bad("request_rate", *r, "must be > 0 requests/s, or \"inf\" (every request at once)")
		}
		b.RequestRate = r.v
	} else if !f.StartTimes.given && (f.RampUp == nil || *f.RampUp == "") {
		return fmt.Errorf("%s: request_rate: missing: without start_times the arrivals are regenerated from it", b.Name)
	}
	if x := f.Burstiness; x != nil && !x.null {
		if !(x.v > 0) {
			return bad("burstiness", *x, "must be > 0 (vLLM's gamma shape; 1 = Poisson)")
		}
		b.Burstiness = x.v
	}
	if x := f.MaxConcurrency; x != nil && !x.null {
		if !(x.v >= 1) || x.v != math.Trunc(x.v) || x.v > math.MaxInt32 {
			return bad("max_concurrency", *x, "must be a whole number >= 1 (or null: no cap)")
		}
		b.MaxConcurrency = int(x.v)
	}
	if f.RampUp != nil && *f.RampUp != "" {
		s := *f.RampUp
		if s != "linear" && s != "exponential" {
			return bad("ramp_up_strategy", jsonx.Quote(s), "must be linear or exponential (or null)")
		}
		for _, e := range []struct {
			field string
			x     *num
		}{{"ramp_up_start_rps", f.RampUpStart}, {"ramp_up_end_rps", f.RampUpEnd}} {
			if e.x == nil || e.x.null {
				return fmt.Errorf("%s: %s: missing: ramp_up_strategy %s needs it", b.Name, e.field, s)
			}
			if !(e.x.v > 0) || math.IsInf(e.x.v, 0) {
				return bad(e.field, *e.x, "must be a finite rate > 0 requests/s (vLLM asserts every request's rate is > 0)")
			}
		}
	}
	return nil
}

// arrivals sets each request's arrival: its start_times entry less the first one's, or,
// without start_times, the schedule vLLM's client draws (get_request) with its concurrency
// cap replayed on the measured latencies.
func (b *Bench) arrivals(f *benchFile, failed []bool, seed uint64, bad func(string, any, string, ...any) error) error {
	n := f.TTFTs.len()
	send := make([]float64, n)
	if f.StartTimes.given {
		first := math.Inf(1)
		for i := range n {
			x := f.StartTimes.at(i)
			if x.null || math.IsNaN(x.v) || math.IsInf(x.v, 0) {
				return bad(fmt.Sprintf("start_times[%d]", i), x, "must be a finite time in seconds")
			}
			send[i] = x.v
			first = min(first, x.v)
		}
		for i := range send {
			send[i] -= first
		}
		b.Arrivals = "start_times (the client's send times)"
	} else {
		sched, desc, err := schedule(f, n, b.RequestRate, b.Burstiness, seed)
		if err != nil {
			return bad("ramp_up_strategy", jsonx.Quote(*f.RampUp), "%v", err)
		}
		e2e := make([]float64, n)
		for _, r := range b.Requests {
			e2e[r.Index] = r.E2E
		}
		send = capConcurrency(sched, e2e, b.MaxConcurrency)
		b.Arrivals = desc
	}
	for i := range b.Requests {
		at := send[b.Requests[i].Index]
		if !(at <= maxSeconds) {
			if f.StartTimes.given {
				return bad(fmt.Sprintf("start_times[%d]", b.Requests[i].Index), f.StartTimes.at(b.Requests[i].Index), "is %g s after the first request: a run spans at most %g s", at, maxSeconds)
			}
			field, v := "request_rate", any(nil)
			if f.RequestRate != nil {
				v = *f.RequestRate
			} else {
				field, v = "ramp_up_start_rps", *f.RampUpStart
			}
			return bad(field, v, "sends request %d %g s after the first: a run spans at most %g s", b.Requests[i].Index, at, maxSeconds)
		}
		b.Requests[i].Arrival = at
	}
	return nil
}

// schedule is the send schedule vLLM's client draws (vllm/benchmarks/serve.py, get_request):
// request i at rate r_i (the request_rate, or the ramp-up's rate at i), gaps drawn from a
// gamma of shape burstiness and scale 1/(r_i·burstiness) (constant 1/r_i at an infinite
// burstiness, 0 at an infinite rate), summed and — without a ramp-up — rescaled so the last
// is at n/request_rate. vLLM seeds numpy, which this does not reproduce: the draws are ours,
// seeded by seed, with the same distribution.
func schedule(f *benchFile, n int, rate, burst float64, seed uint64) ([]float64, string, error) {
	rng := rand.New(rand.NewPCG(seed, 0x63616c69))
	ramp := f.RampUp != nil && *f.RampUp != ""
	at := make([]float64, n)
	var t float64
	for i := range at {
		r := rate
		if ramp {
			lo, hi := f.RampUpStart.v, f.RampUpEnd.v
			p := float64(i) / float64(max(n-1, 1))
			if *f.RampUp == "linear" {
				r = lo + (hi-lo)*p
			} else {
				r = lo * math.Pow(hi/lo, p)
			}
			if !(r > 0) {
				return nil, "", fmt.Errorf("request %d's rate %g is not > 0", i, r)
			}
		}
		switch {
		case math.IsInf(r, 1):
		case math.IsInf(burst, 1):
			t += 1 / r
		default:
			t += gammarand.Sample(rng, burst) / (r * burst)
		}
		at[i] = t
	}
	if !ramp && t > 0 {
		k := (float64(n) / rate) / t
		for i := range at {
			at[i] *= k
		}
	}
	desc := fmt.Sprintf("regenerated: the file has no start_times; gamma gaps of shape %g at %g requests/s, seed %d (vLLM's distribution, not its draws)", burst, rate, seed)
	switch {
	case ramp:
		desc = fmt.Sprintf("regenerated: the file has no start_times; a %s ramp-up from %g to %g requests/s, gamma shape %g, seed %d (vLLM's distribution, not its draws)", *f.RampUp, f.RampUpStart.v, f.RampUpEnd.v, burst, seed)
	case math.IsInf(rate, 1):
		desc = "regenerated: the file has no start_times; request_rate inf sends every request at once"
	}
	if c := f.MaxConcurrency; c != nil && !c.null {
		desc += fmt.Sprintf(", held to max_concurrency %d on the measured latencies", int(c.v))
	}
	return at, desc, nil
}

// capConcurrency is when each request is sent under the client's cap of c requests in flight
// (0: none): vLLM's client takes a semaphore before it sends, so request i waits, in order,
// for the earliest of the requests in flight to end — ends the measured latencies give.
func capConcurrency(sched, e2e []float64, c int) []float64 {
	if c <= 0 || c >= len(sched) {
		return sched
	}
	send := make([]float64, len(sched))
	var ends []float64 // the in-flight requests' ends, sorted
	for i, s := range sched {
		if len(ends) == c {
			s = max(s, ends[0])
			ends = ends[1:]
		}
		send[i] = s
		e := s + e2e[i]
		k, _ := slices.BinarySearch(ends, e)
		ends = slices.Insert(ends, k, e)
	}
	return send
}

// pythonLiterals rewrites the bare NaN, Infinity and -Infinity that Python's json module
// writes for floats that are not finite (allow_nan, its default) into strings, outside of
// strings, so the decoder can name them as bad values instead of failing as invalid JSON.
// data comes back unchanged (not copied) when it holds none.
func pythonLiterals(data []byte) []byte {
	if !bytes.Contains(data, []byte("NaN")) && !bytes.Contains(data, []byte("Infinity")) {
		return data
	}
	var out []byte
	last := 0
	inStr := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inStr {
			switch c {
			case '\\':
				i++
			case '"':
				inStr = false
			}
			continue
		}
		if c == '"' {
			inStr = true
			continue
		}
		for _, lit := range []string{"NaN", "Infinity", "-Infinity"} {
			if bytes.HasPrefix(data[i:], []byte(lit)) {
				out = append(out, data[last:i]...)
				out = append(out, '"')
				out = append(out, lit...)
				out = append(out, '"')
				i += len(lit) - 1
				last = i + 1
				break
			}
		}
	}
	if out == nil {
		return data
	}
	return append(out, data[last:]...)
}
