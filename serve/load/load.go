// Package load is `plan load`: an open-loop load generator for `plan serve` (or any server
// speaking the same KServe v2 JSON). Arrival times come from the simulator's arrival
// processes with the simulator's seeding (dataplane/workload, shared with sim), so `plan load --load L --seed S` against a server
// and `plan simulate --load L --seed S` replay the very same trace; results are reported in
// the simulator's report type (workload.Report). Open loop means a request is sent at its arrival time whether
// or not earlier ones were answered, so overload shows up as drops, not as a slower client.
// RunOpenAI (openai.go, `plan load --openai`) is a streaming benchmark client for any
// OpenAI-compatible server instead, reporting TTFT, TPOT, ITL and E2E as vLLM's
// benchmark_serving does.
package load

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	neturl "net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/serve/internal/waketimer"
	"github.com/plan-dev/plan/serve/kserve"
)

// Options configure a run.
type Options struct {
	// URL is the server's base URL (http://127.0.0.1:8080).
	URL string
	// Model restricts the run to one model ("" = every model of the served plan).
	Model string
	// Load scales every model's planned rate (as `plan simulate --load`); Rate, when > 0,
	// sets the rate of the one model instead (Load is then Rate / its planned rate).
	Load float64
	Rate float64
	// RateScale, when > 0, replays a Trace file at this multiple of each model's recorded
	// rate (workload.ArrivalSpec.RecordedRate; 1.0 = as recorded) instead of Load's planned
	// rates (`plan load --rate-scale`).
	RateScale float64
	// Duration is the arrival window; MaxRequests (> 0) stops arrivals earlier.
	Duration time.Duration
	// DurationSet says Duration was given (--duration): an exact LLM trace replay (llm.go)
	// otherwise sends the whole trace, its window ending at its last request.
	DurationSet bool
	MaxRequests int
	Arrival     workload.ArrivalSpec
	Seed        uint64
	// SLO overrides the servers' objective for attainment (0 = the model's, from metadata).
	SLO time.Duration
	// Timeout bounds one request (0 = 10 × SLO + 5 s); a request that times out is given up:
	// the client closes its connection (or ends its gRPC call), the server withdraws it,
	// and it counts as dropped at stage "client" with reason
	// ReasonCancelled: never completed, never lost.
	Timeout time.Duration
	// Client sends the requests (nil = one with at most MaxConns connections).
	Client *http.Client
	// MaxConns bounds the connections of the default client (default 2048, `plan load
	// --connections`): beyond it, requests wait for a connection (the wait counts in their
	// latency) instead of exhausting file descriptors when the server falls behind. An
	// open-loop client needs about rate × latency of them: 2,900 req/s held ~200 ms each is
	// ~600.
	MaxConns int
	// Deploy reads the served plan's applications and planned rates (the system registry's
	// deployer for the plan's section).
	Deploy func(*formats.Plan) (*dataplane.Deployment, string, error)
	// Sections are the registered systems' plan sections (the system registry's), so a
	// served plan of any registered system decodes and is checked by its system. Required
	// unless Plan is given: no other set stands in for the registry's.
	Sections *formats.SectionSet
	// Plan, when set, is the plan the server runs, read by the caller (`plan load --plan`):
	// the run takes its applications, rates and SLOs from it instead of GET /v1/plan, so any
	// KServe v2 server of its models (Triton, KServe, the export of the plan) can be loaded;
	// each model's metadata still comes from the server (GET /v2/models/NAME).
	Plan *formats.Plan
	// Progress, when set, is called at most every 250 ms while sending, and once at the end,
	// with the requests sent and answered so far.
	Progress func(sent, answered int64)
	// Warmup excludes the requests arriving in the run's first Warmup from its statistics
	// (they are sent and answered as any other; the report's goodput is per second of the
	// rest), as `plan simulate --warmup` does: a negative value takes the simulator's default
	// rule (workload.DefaultWarmup over the targets' SLOs), 0 counts every request.
	Warmup time.Duration
	// Send, when set, sends each request instead of HTTP POST …/infer (`plan load --grpc`):
	// plan and metadata still come from URL. See send.go.
	Send Sender
	// Header is sent with every HTTP request (--header; --api-key as Authorization: Bearer).
	Header http.Header
}

// Sample is one request's client-side record.
type Sample struct {
	App int
	// Index is the request's index among its application's arrivals in the trace, sent to
	// the server as kserve.TraceIndexHeader so that its emulated draws follow the trace.
	Index   int64
	Arrival time.Duration // scheduled, from the start
	Latency time.Duration // send → answer
	Status  int           // 0 = transport error
	Reason  string
	Stage   string
	// ServerLatency is the latency the server reported (timing.latency_us): the client's
	// latency without the HTTP round trip.
	ServerLatency time.Duration
	// Wait is how long the request waited in the client for a connection before it was
	// written (the raw client only): part of Latency the server cannot see.
	Wait time.Duration
	// InTokens and OutTokens are an LLM request's tokens from an exactly replayed trace
	// (sent as kserve.TraceTokensHeader; 0 = not given). ServerFirstToken is the time to
	// first token the server reported (timing.first_token_us; 0 = none).
	InTokens, OutTokens int32
	ServerFirstToken    time.Duration
	// Label is the answer's parameters.label, when it has one (HasLabel).
	Label    int32
	HasLabel bool
}

// Result is what Run returns: the report (the simulator's format) and the raw samples.
type Result struct {
	Report  *workload.Report
	Samples []Sample
	// Lag is the largest delay between a scheduled arrival and its send (the generator's
	// own tardiness).
	Lag time.Duration
	// Outcomes tells the server's answers from the client's failures.
	Outcomes Outcomes
}

// ReasonCancelled is the drop reason of a request the client gave up on (Options.Timeout):
// the server's own name for a request whose client left (serve's outcome "cancelled").
const ReasonCancelled = "cancelled"

// Outcomes splits a run's requests by who decided their fate.
type Outcomes struct {
	// Completed and Late are 200 answers within and after the SLO (client-measured).
	Completed int64 `json:"completed"`
	Late      int64 `json:"late"`
	// ServerLate counts the late answers that were late by the server's own clock too
	// (timing.latency_us > SLO); the rest of Late left the server on time and lost it on the
	// way (the write, the client's read, a generator starved of CPU on a shared machine).
	ServerLate int64 `json:"server_late"`
	// ServerP99 is the 99th percentile of the latency the server reported for its 200
	// answers (0 when it reported none).
	ServerP99 time.Duration `json:"server_p99_ns"`
	// WaitP99 is the 99th percentile of the client's wait for a connection (Sample.Wait) over
	// the 200 answers.
	WaitP99 time.Duration `json:"client_wait_p99_ns"`
	// ServerDrops counts the server's 503s by reason (stage intake: refused at the door).
	ServerDrops []workload.DropCount `json:"server_drops,omitempty"`
	// ServerErrors counts other HTTP statuses (400, 404, 500, 502, ...).
	ServerErrors map[int]int64 `json:"server_errors,omitempty"`
	// Cancelled are requests with no answer within Options.Timeout, given up by the client
	// and withdrawn by the server (outcome cancelled in its metrics); ClientErrors other
	// transport failures (refused or reset connections, a request never sent).
	Cancelled    int64 `json:"cancelled"`
	ClientErrors int64 `json:"client_errors"`
}

func outcomes(samples []Sample, targets []target) Outcomes {
	o := Outcomes{ServerErrors: map[int]int64{}}
	drops := map[[2]string]int64{}
	var server, wait []float64
	for _, s := range samples {
		switch {
		case s.Status == http.StatusOK:
			if dataplane.Time(s.Latency.Microseconds()) <= targets[s.App].slo {
				o.Completed++
			} else {
				o.Late++
				if dataplane.Time(s.ServerLatency.Microseconds()) > targets[s.App].slo {
					o.ServerLate++
				}
			}
			if s.ServerLatency > 0 {
				server = append(server, float64(s.ServerLatency))
			}
			wait = append(wait, float64(s.Wait))
		case s.Status == http.StatusServiceUnavailable:
			drops[[2]string{s.Stage, s.Reason}]++
		case s.Status != 0:
			o.ServerErrors[s.Status]++
		case s.Reason == ReasonCancelled:
			o.Cancelled++
		default:
			o.ClientErrors++
		}
	}
	if len(server) > 0 {
		o.ServerP99 = durationPercentile(server, 99)
	}
	if len(wait) > 0 {
		o.WaitP99 = durationPercentile(wait, 99)
	}
	for k, v := range drops {
		o.ServerDrops = append(o.ServerDrops, workload.DropCount{Stage: k[0], Reason: k[1], Count: v})
	}
	sort.Slice(o.ServerDrops, func(i, j int) bool {
		a, b := o.ServerDrops[i], o.ServerDrops[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.Stage+a.Reason < b.Stage+b.Reason
	})
	return o
}

type target struct {
	name string
	slo  dataplane.Time
	rate float64 // planned rate (load 1.0)
	body []byte
	md   *kserve.ModelMetadata
}

// ErrSetup matches the errors Run returns before sending anything: no server answering at
// the URL, a model the served plan lacks, a rate that does not fit the plan. They are the
// user's input, not the server's behaviour (the CLI exits 2 on them).
var ErrSetup = errors.New("load cannot start")

// setupError marks err as ErrSetup without changing its message.
type setupError struct{ error }

func (e setupError) Unwrap() []error { return []error{e.error, ErrSetup} }

// Run sends the trace and waits for every answer.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.MaxConns <= 0 {
		o.MaxConns = 2048
	}
	// Without a client of the caller's, infer requests go through the raw client
	// (rawhttp.go); o.Client still fetches the plan and the models' metadata.
	// The raw client speaks plain HTTP only: an https server gets net/http's.
	useRaw := o.Client == nil && !strings.HasPrefix(strings.ToLower(o.URL), "https:")
	if o.Client == nil {
		o.Client = &http.Client{CheckRedirect: refuseRedirect,
			Transport: &http.Transport{MaxConnsPerHost: o.MaxConns, MaxIdleConnsPerHost: o.MaxConns, IdleConnTimeout: 30 * time.Second}}
		defer o.Client.CloseIdleConnections()
	}
	base := strings.TrimRight(o.URL, "/")
	plan, policy, dep, targets, load, err := setup(ctx, &o, base)
	if err != nil {
		return nil, err
	}
	o.Duration = defaultWindow(o, plan)
	arrivals, err := arrivalsOf(o, plan, dep, targets, load)
	if err != nil {
		return nil, err
	}
	o.Duration = replayWindow(o, plan, arrivals)

	samples := make([]Sample, len(arrivals))
	var raw *rawClient
	if useRaw && o.Send == nil {
		if raw, err = newRawClientHeader(ctx, base, o.Header, o.MaxConns, o.Timeout, len(arrivals), targets); err != nil {
			return nil, setupError{err}
		}
	}
	var wg sync.WaitGroup
	var answered atomic.Int64
	var lag time.Duration
	start := time.Now()
	sent := 0
	cancelled := false
	var lastProgress time.Time
	// A precise timer: Go's timers would release arrivals up to 1 ms late in clumps, making
	// the trace burstier than the simulator's.
	wt := waketimer.New()
	defer wt.Close()
send:
	for i, a := range arrivals {
		due := start.Add(time.Duration(a.t) * time.Microsecond)
		for d := time.Until(due); d > 0; d = time.Until(due) {
			wt.Reset(d)
			select {
			case <-wt.C():
			case <-ctx.Done():
				cancelled = true
				break send
			}
		}
		lag = max(lag, time.Since(due))
		samples[i] = Sample{App: a.app, Index: a.n, Arrival: time.Duration(a.t) * time.Microsecond, InTokens: a.in, OutTokens: a.out}
		wg.Add(1)
		if raw != nil {
			raw.send(&targets[a.app], &samples[i], func() {
				answered.Add(1)
				wg.Done()
			})
		} else {
			go func(s *Sample, t *target) {
				defer wg.Done()
				if o.Send != nil {
					send(ctx, o.Send, t, s, o.Timeout)
				} else {
					do(ctx, o.Client, base, o.Header, t, s, o.Timeout)
				}
				answered.Add(1)
			}(&samples[i], &targets[a.app])
		}
		sent++
		if o.Progress != nil && time.Since(lastProgress) > 250*time.Millisecond {
			lastProgress = time.Now()
			o.Progress(int64(sent), answered.Load())
		}
	}
	wg.Wait()
	if raw != nil {
		raw.close()
	}
	if o.Progress != nil {
		o.Progress(int64(sent), answered.Load())
	}
	if cancelled {
		return nil, ctx.Err()
	}
	samples = samples[:sent]
	o.Warmup = warmupOf(o, targets)
	measured := make([]Sample, 0, len(samples))
	for _, s := range samples {
		if s.Arrival >= o.Warmup {
			measured = append(measured, s)
		}
	}
	rep := report(plan, policy, o, targets, load, measured)
	addAccuracy(rep, dep, measured, targets)
	addPercentiles(rep, dep, measured, targets)
	return &Result{Report: rep, Samples: samples, Lag: lag, Outcomes: outcomes(measured, targets)}, nil
}

// setup reads the served plan and its models' metadata and resolves the run's targets, load
// and request timeout (into o); its errors are ErrSetup.
func setup(ctx context.Context, o *Options, base string) (plan *formats.Plan, policy string, dep *dataplane.Deployment, targets []target, load float64, err error) {
	switch {
	case o.Plan != nil:
		plan = o.Plan
	case o.Sections == nil:
		// Only the registry's sections read the served plan with its system's rules; no
		// other set stands in for them.
		return nil, "", nil, nil, 0, setupError{errors.New("load: Options.Sections is required to read the served plan (the system registry's sections), or Options.Plan")}
	default:
		if plan, policy, err = fetchPlan(ctx, o.Client, base, o.Header, o.Sections); err != nil {
			return nil, "", nil, nil, 0, setupError{err}
		}
	}
	if o.Deploy == nil {
		return nil, "", nil, nil, 0, setupError{errors.New("load: Options.Deploy is required")}
	}
	dep, _, err = o.Deploy(plan)
	if err != nil {
		return nil, "", nil, nil, 0, setupError{fmt.Errorf("%s/v1/plan: %w", base, err)}
	}
	for _, a := range dep.Apps {
		if o.Model != "" && a.Name != o.Model {
			continue
		}
		md, err := fetchModel(ctx, o.Client, base, o.Header, a.Name)
		if err != nil {
			return nil, "", nil, nil, 0, setupError{err}
		}
		t := target{name: a.Name, slo: a.SLO, rate: a.RateRPS, body: requestBody(md), md: md}
		if md.SLOUs > 0 {
			t.slo = dataplane.Time(md.SLOUs)
		}
		if o.SLO > 0 {
			t.slo = dataplane.Time(o.SLO / time.Microsecond)
		}
		targets = append(targets, t)
	}
	if len(targets) == 0 {
		var served []string
		for _, a := range dep.Apps {
			served = append(served, a.Name)
		}
		return nil, "", nil, nil, 0, setupError{fmt.Errorf("--model: %q: the served plan has no such model (it serves %s)", o.Model, strings.Join(served, ", "))}
	}
	load = o.Load
	if o.RateScale > 0 {
		for i := range targets {
			r, err := o.Arrival.RecordedRate(targets[i].name)
			if err != nil {
				return nil, "", nil, nil, 0, setupError{fmt.Errorf("--rate-scale: %w", err)}
			}
			targets[i].rate = r // load factor 1.0 = the trace as recorded
		}
		load = o.RateScale
	}
	if o.Rate > 0 {
		if len(targets) != 1 {
			return nil, "", nil, nil, 0, setupError{fmt.Errorf("--rate needs one model: name it with --model (the plan serves %d)", len(targets))}
		}
		load = o.Rate / targets[0].rate
	}
	if !(load > 0) || math.IsInf(load, 0) {
		return nil, "", nil, nil, 0, setupError{fmt.Errorf("load %g: must be > 0", load)}
	}
	if o.Timeout <= 0 {
		var slo dataplane.Time
		for _, t := range targets {
			slo = max(slo, t.slo)
		}
		o.Timeout = 10*time.Duration(slo)*time.Microsecond + 5*time.Second
	}
	return plan, policy, dep, targets, load, nil
}

// arrival is one scheduled request.
type arrival struct {
	t   dataplane.Time
	app int
	n   int64 // index among the target's arrivals
	// in and out are the request's tokens in an exact LLM replay (llm.go; 0 = not given).
	in, out int32
}

// defaultWindow is the arrival window before any arrival is drawn: --duration when given;
// else a Trace file's recorded span (the trace replayed whole, as plan simulate does), else
// the default Duration. An exact LLM replay sets its own (llm.go).
func defaultWindow(o Options, plan *formats.Plan) time.Duration {
	if o.DurationSet || (llmClasses(plan) != nil && o.Arrival.Trace != nil && len(o.Arrival.Trace.Requests) > 0) {
		return o.Duration
	}
	if span, _, ok := o.Arrival.Extent(); ok && span > 0 {
		return time.Duration(span) * time.Microsecond
	}
	return o.Duration
}

// byCount reports whether --max-requests alone bounds the run: given without --duration,
// it wins over the default window (arrivals go on until that many were drawn).
func byCount(o Options) bool { return o.MaxRequests > 0 && !o.DurationSet }

// arrivalsOf draws every target's arrivals in the window, seeded as the simulator seeds the
// same load point, in time order (at most o.MaxRequests; without --duration, exactly that
// many where the process has them).
func arrivalsOf(o Options, plan *formats.Plan, dep *dataplane.Deployment, targets []target, load float64) ([]arrival, error) {
	window := dataplane.Time(o.Duration / time.Microsecond)
	if x, ok, err := exactArrivals(o, plan, targets, load, window); ok || err != nil {
		return x, err
	}
	if byCount(o) {
		window = dataplane.Never
	}
	var arrivals []arrival
	for i, t := range targets {
		app := appIndex(dep, t.name)
		rate := t.rate * load
		if o.Rate > 0 {
			rate = o.Rate
		}
		src, err := o.Arrival.New(rate, t.name, workload.PointSeed(o.Seed, load, app))
		if err != nil {
			return nil, err
		}
		var n int64
		for {
			at := src.Next()
			if at == dataplane.Never || at >= window || (byCount(o) && n >= int64(o.MaxRequests)) {
				break
			}
			arrivals = append(arrivals, arrival{t: at, app: i, n: n})
			n++
		}
	}
	sort.SliceStable(arrivals, func(i, j int) bool { return arrivals[i].t < arrivals[j].t })
	if o.MaxRequests > 0 && len(arrivals) > o.MaxRequests {
		arrivals = arrivals[:o.MaxRequests]
	}

	return arrivals, nil
}

func appIndex(dep *dataplane.Deployment, name string) int {
	for i, a := range dep.Apps {
		if a.Name == name {
			return i
		}
	}
	return -1
}

// do sends one request and records the answer.
func do(ctx context.Context, c *http.Client, base string, header http.Header, t *target, s *Sample, timeout time.Duration) {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, base+"/v2/models/"+t.name+"/infer", bytes.NewReader(t.body))
	if err != nil {
		s.Reason, s.Stage = "error", "client"
		return
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(kserve.TraceIndexHeader, strconv.FormatInt(s.Index, 10))
	if s.InTokens > 0 || s.OutTokens > 0 {
		req.Header.Set(kserve.TraceTokensHeader, tokensHeader(s))
	}
	begin := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		s.Latency = time.Since(begin)
		s.Stage = "client"
		s.Reason = "error"
		if errors.Is(err, context.DeadlineExceeded) {
			s.Reason = ReasonCancelled
		}
		return
	}
	// A response is bounded (maxInferBody): a server streaming an endless body costs the
	// client that much memory at most, and the request fails as a client error.
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxInferBody+1))
	if rerr == nil && len(body) > maxInferBody {
		rerr = fmt.Errorf("response body over %d bytes", maxInferBody)
	}
	resp.Body.Close()
	s.Latency = time.Since(begin)
	s.Status = resp.StatusCode
	switch {
	case rerr != nil:
		s.Status, s.Stage, s.Reason = 0, "client", "error"
	case resp.StatusCode == http.StatusServiceUnavailable:
		var d kserve.DropResponse
		if json.Unmarshal(body, &d) == nil && d.Reason != "" {
			s.Reason, s.Stage = d.Reason, d.Stage
		} else {
			s.Reason, s.Stage = "http-503", "server"
		}
	case resp.StatusCode != http.StatusOK:
		s.Reason, s.Stage = fmt.Sprintf("http-%d", resp.StatusCode), "server"
	default:
		var r struct {
			Timing struct {
				LatencyUs    int64 `json:"latency_us"`
				FirstTokenUs int64 `json:"first_token_us"`
			} `json:"timing"`
		}
		if json.Unmarshal(body, &r) == nil {
			s.ServerLatency = time.Duration(r.Timing.LatencyUs) * time.Microsecond
			s.ServerFirstToken = time.Duration(r.Timing.FirstTokenUs) * time.Microsecond
		}
		s.readLabel(body)
	}
}

func fetchPlan(ctx context.Context, c *http.Client, base string, header http.Header, secs *formats.SectionSet) (*formats.Plan, string, error) {
	body, h, err := get(ctx, c, base+"/v1/plan", header)
	if err != nil {
		return nil, "", err
	}
	p, err := formats.DecodeInto[*formats.Plan]("GET /v1/plan", body, secs)
	if err != nil {
		return nil, "", err
	}
	return p, h.Get("X-Plan-Policy"), nil
}

func fetchModel(ctx context.Context, c *http.Client, base string, header http.Header, model string) (*kserve.ModelMetadata, error) {
	body, _, err := get(ctx, c, base+"/v2/models/"+model, header)
	if err != nil {
		return nil, err
	}
	var md kserve.ModelMetadata
	if err := json.Unmarshal(body, &md); err != nil || len(md.Inputs) == 0 {
		return nil, fmt.Errorf("%s/v2/models/%s: not KServe v2 model metadata", base, model)
	}
	return &md, nil
}

func get(ctx context.Context, c *http.Client, url string, header http.Header) ([]byte, http.Header, error) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	return doGet(c, req)
}

// doGet sends a GET and reads its 200 answer; errors name the URL (never the headers: they
// may carry an API key).
func doGet(c *http.Client, req *http.Request) ([]byte, http.Header, error) {
	url := req.URL.Redacted()
	resp, err := c.Do(req)
	if err != nil {
		var ue *neturl.Error
		if errors.As(err, &ue) {
			err = ue.Err // it repeats the method and URL
		}
		return nil, nil, fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxGetBody+1))
	if err != nil {
		return nil, nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if len(b) > maxGetBody {
		// An endless or huge answer (a plan, model metadata) is refused by name rather than
		// read whole or cut into JSON that then fails to parse.
		return nil, nil, fmt.Errorf("GET %s: the answer is over %d MiB: not a plan or model metadata", url, maxGetBody>>20)
	}
	if resp.StatusCode != 200 {
		return nil, nil, fmt.Errorf("GET %s: status %d: %s", url, resp.StatusCode, strings.TrimSpace(string(b[:min(len(b), 200)])))
	}
	return b, resp.Header, nil
}

// SampleShape is the shape of one sample for the model's input (its first): the batch
// dimension 1, variable dimensions 4; n is the number of values.
func SampleShape(md *kserve.ModelMetadata) (shape []int64, n int64) {
	in := md.Inputs[0]
	shape = make([]int64, len(in.Shape))
	n = 1
	for i, d := range in.Shape {
		switch {
		case i == 0:
			d = 1
		case d < 0:
			d = 4
		}
		shape[i] = d
		n *= d
	}
	return shape, n
}

// requestBody builds one sample for the model's input (SampleShape), its values a
// deterministic ramp.
func requestBody(md *kserve.ModelMetadata) []byte {
	in := md.Inputs[0]
	shape, n := SampleShape(md)
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"inputs":[{"name":%q,"shape":%s,"datatype":%q,"data":[`, in.Name, mustJSON(shape), in.Datatype)
	for i := int64(0); i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		if in.Datatype == "BOOL" {
			b.WriteString("false")
		} else {
			fmt.Fprintf(&b, "%d", i%7)
		}
	}
	b.WriteString("]}]}")
	return b.Bytes()
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// report summarizes the samples exactly as the simulator summarizes requests: a request is
// completed when answered 200 within its SLO as measured by the client, late when answered
// after it, and dropped otherwise (503 with the server's reason and stage, or a client-side
// failure at stage "client").
func report(plan *formats.Plan, policy string, o Options, targets []target, load float64, samples []Sample) *workload.Report {
	secs := (o.Duration - max(o.Warmup, 0)).Seconds()
	type acc struct {
		requests, completed, late, dropped, cancelled int64
		lat                                           []int64
		drops                                         map[[2]string]int64
	}
	accs := make([]acc, len(targets))
	for i := range accs {
		accs[i].drops = map[[2]string]int64{}
	}
	var end time.Duration
	for _, s := range samples {
		a := &accs[s.App]
		a.requests++
		end = max(end, s.Arrival+s.Latency)
		if s.Status == 200 {
			lat := s.Latency.Microseconds()
			a.lat = append(a.lat, lat)
			if dataplane.Time(lat) <= targets[s.App].slo {
				a.completed++
			} else {
				a.late++
			}
			continue
		}
		if s.Status == 0 && s.Reason == ReasonCancelled {
			// Given up by the client and withdrawn by the server: counted apart, as the
			// simulator counts its cancels (AppMetrics.Cancelled), never as a drop or lost.
			a.cancelled++
			continue
		}
		a.dropped++
		a.drops[[2]string{s.Stage, s.Reason}]++
	}
	summarize := func(name string, a *acc, offered float64) workload.AppMetrics {
		m := workload.AppMetrics{Name: name, OfferedRPS: workload.Round6(offered), Requests: a.requests, Completed: a.completed, Late: a.late, Dropped: a.dropped, Cancelled: a.cancelled, Attainment: 1}
		if a.requests > 0 {
			m.Attainment = workload.Round6(float64(a.completed) / float64(a.requests))
		}
		if secs > 0 {
			m.GoodputRPS = workload.Round6(float64(a.completed) / secs)
		}
		for k, v := range a.drops {
			m.Drops = append(m.Drops, workload.DropCount{Stage: k[0], Reason: k[1], Count: v})
		}
		sort.Slice(m.Drops, func(i, j int) bool {
			if m.Drops[i].Stage != m.Drops[j].Stage {
				return m.Drops[i].Stage < m.Drops[j].Stage
			}
			return m.Drops[i].Reason < m.Drops[j].Reason
		})
		m.Latency = percentiles(a.lat)
		return m
	}
	var all acc
	all.drops = map[[2]string]int64{}
	var met workload.Metrics
	var totalRate float64
	for i, t := range targets {
		a := &accs[i]
		rate := t.rate * load
		if o.Rate > 0 {
			rate = o.Rate
		}
		totalRate += rate
		met.Apps = append(met.Apps, summarize(t.name, a, rate))
		all.requests += a.requests
		all.completed += a.completed
		all.late += a.late
		all.dropped += a.dropped
		all.cancelled += a.cancelled
		all.lat = append(all.lat, a.lat...)
		for k, v := range a.drops {
			all.drops[k] += v
		}
	}
	met.Total = summarize("total", &all, totalRate)
	addLLMMetrics(plan, o, &met, samples, end)
	met.EndUs = end.Microseconds()
	rep := &workload.Report{
		APIVersion: formats.APIVersion, Kind: workload.ReportKind, Plan: plan.Metadata.Name, Policy: policy,
		Trace: o.Arrival.Name, Seed: o.Seed, DurationUs: o.Duration.Microseconds(), WarmupUs: max(o.Warmup, 0).Microseconds(),
		Points: []workload.Point{{Load: workload.Round6(load), Metrics: met}},
	}
	// The plan's strategy, as plan simulate labels its report (of every system, not only
	// PPipe's), so the two reports of one plan compare field by field.
	rep.Strategy = plan.Provenance.Strategy
	if rep.Policy == "" {
		// A server that does not say its policy (X-Plan-Policy): label the run with the
		// plan's system, its section, rather than any one system's name.
		rep.Policy = strings.Join(plan.SectionKeys(), "+")
	}
	for _, t := range targets {
		rep.BaseRPS = append(rep.BaseRPS, workload.AppRate{App: t.name, RPS: workload.Round6(t.rate)})
	}
	rep.MaxLoad99 = workload.MaxLoadAt(rep.Points, 0.99)
	return rep
}

// warmupOf is the run's warm-up window: Options.Warmup, or for a negative one the
// simulator's default rule over the targets' SLOs, within the arrival window.
func warmupOf(o Options, targets []target) time.Duration {
	w := o.Warmup
	if w < 0 {
		dep := &dataplane.Deployment{}
		for _, t := range targets {
			dep.Apps = append(dep.Apps, dataplane.App{SLO: t.slo})
		}
		w = time.Duration(workload.DefaultWarmup(dep, dataplane.Time(o.Duration/time.Microsecond))) * time.Microsecond
	}
	return min(w, o.Duration)
}

func percentiles(lat []int64) workload.Latency {
	xs := make([]float64, len(lat))
	for i, v := range lat {
		xs[i] = float64(v)
	}
	return summarizeUs(xs)
}

// maxInferBody bounds one inference response read by `plan load` (KServe v2 and the plan
// server's own): 64 MiB, far above any tensor output it judges.
const maxInferBody = 64 << 20

// maxGetBody bounds a GET answer `plan load` reads (the plan, model metadata): 64 MiB.
const maxGetBody = 64 << 20
