package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/serve"
)

// Remote engines: OpenAI-compatible servers (vLLM) that do the generation
// while QLM decides the order and the instance (QLM §3: QLM sits in front of unmodified
// serving engines and drives them through their request queues). --llm-endpoints maps the
// plan's instances to engines; a request is forwarded to its instance's engine when the QLM
// engine dispatches it there (its first iteration, OnHop), and the engine's own answer,
// whole or streamed, goes back to the client. The engines' /metrics gauges
// (vLLM's Prometheus vllm:num_requests_waiting and vllm:num_requests_running) are read
// every poll interval (--llm-poll) and shown at GET /v1/engines.
//
// They also feed the policy (remote engines' queue lengths). After every poll
// round the front end hands each engine's gauges to the serving policy on the driver
// goroutine (serve.Server.WithPolicy), when the policy implements InstanceObserver (the
// dataplane/qlm policies do); an engine that could not be read is reported as holding nothing. The gauges count
// everything the engine holds, QLM's own forwarded requests included: QLM takes their excess
// over the requests it has running or swapped on that instance as external load, work ahead
// of the instance's virtual queue (the Eq. 2 drain of that many requests, QLM §6), so its
// completion estimates on that instance grow, new request groups go to other instances,
// replans move waiting groups away, and the busy instance stops pulling work it would start
// later (QLM §5, §7). The policy's own model of the instance (its emulated batch) is not
// replaced by the gauges: it still decides when a request is forwarded.

// InstanceObserver is implemented by a policy that takes the load observed at an instance's
// engine: waiting and running requests, everything the engine holds (dataplane/qlm.Policy).
// It is called on the driver goroutine.
type InstanceObserver interface {
	ObserveInstance(now dataplane.Time, instance string, waiting, running float64)
}

// EndpointList is the --llm-endpoints flag: instance=URL pairs, comma-separated.
type EndpointList map[string]string

// String implements pflag.Value.
func (l EndpointList) String() string {
	names := slices.Sorted(maps.Keys(l))
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(n + "=" + l[n])
	}
	return b.String()
}

// Set implements pflag.Value: a malformed pair is an error naming it.
func (l EndpointList) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		name, raw, ok := strings.Cut(p, "=")
		if !ok || name == "" {
			return fmt.Errorf("%q: want INSTANCE=URL", p)
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%s: %q: want an http(s) URL such as http://10.0.0.5:8000", name, raw)
		}
		if _, dup := l[name]; dup {
			return fmt.Errorf("%s: given twice", name)
		}
		l[name] = strings.TrimRight(raw, "/")
	}
	return nil
}

// Type implements pflag.Value.
func (l EndpointList) Type() string { return "instance=url,..." }

// EngineState is one remote engine as last polled.
type EngineState struct {
	Instance string  `json:"instance"`
	URL      string  `json:"url"`
	Model    string  `json:"model,omitempty"`
	Waiting  float64 `json:"num_requests_waiting"`
	Running  float64 `json:"num_requests_running"`
	Polled   int64   `json:"polled_unix_ms,omitempty"`
	Err      string  `json:"error,omitempty"`
	// Failures counts the consecutive failed polls, and forwards the engine failed (a
	// transport error or a 5xx before any answer, which counts as DownAfter at once); Down is
	// set from DownAfter of them until a poll succeeds again (the instance is then failed in
	// the engine, EvWorkerDown).
	Failures int  `json:"consecutive_failures,omitempty"`
	Down     bool `json:"down,omitempty"`
}

// DownAfter is the number of consecutive failed polls after which an engine counts as
// failed: one lost poll is a hiccup, three at the polling interval an outage.
const DownAfter = 3

// Engines polls the remote engines.
type Engines struct {
	client *http.Client
	mu     sync.Mutex
	state  map[string]*EngineState
	// failed counts each instance's forward failures (Engines.fail): a poll that was out
	// when one came must not overwrite it with what the engine answered before.
	failed  map[string]int
	observe func([]EngineState)
	ctx     context.Context
	stop    context.CancelFunc
	done    chan struct{}
}

// StartEngines polls every engine now and then every interval until Close. observe, when
// not nil, receives every engine's state after each poll round: the first on the caller's
// goroutine before StartEngines returns, the later ones on the polling goroutine.
func StartEngines(eps EndpointList, interval time.Duration, client *http.Client, observe func([]EngineState)) *Engines {
	e := newEngines(eps, client, observe)
	e.start(interval)
	return e
}

// newEngines and start are StartEngines in two steps, so that the owner can hold the
// Engines before its first round calls observe (forwarder.markDown reads it).
func newEngines(eps EndpointList, client *http.Client, observe func([]EngineState)) *Engines {
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	e := &Engines{client: client, state: map[string]*EngineState{}, failed: map[string]int{},
		observe: observe, done: make(chan struct{})}
	for n, u := range eps {
		e.state[n] = &EngineState{Instance: n, URL: u}
	}
	e.ctx, e.stop = context.WithCancel(context.Background())
	return e
}

func (e *Engines) start(interval time.Duration) {
	e.round()
	go func() {
		defer close(e.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-e.ctx.Done():
				return
			case <-t.C:
				e.round()
			}
		}
	}()
}

// round polls every engine and hands the states to observe.
func (e *Engines) round() {
	e.pollAll(e.ctx)
	if e.observe != nil && e.ctx.Err() == nil {
		e.observe(e.All())
	}
}

// Close stops polling.
func (e *Engines) Close() {
	e.stop()
	<-e.done
}

// Get returns an instance's engine as last polled.
func (e *Engines) Get(instance string) (EngineState, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.state[instance]
	if !ok {
		return EngineState{}, false
	}
	return *s, true
}

// All returns every engine, by instance name.
func (e *Engines) All() []EngineState {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]EngineState, 0, len(e.state))
	for _, s := range e.state {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Instance < out[j].Instance })
	return out
}

func (e *Engines) pollAll(ctx context.Context) {
	for _, s := range e.All() {
		e.mu.Lock()
		failed := e.failed[s.Instance]
		e.mu.Unlock()
		ns := e.poll(ctx, s)
		e.mu.Lock()
		cur := e.state[s.Instance]
		switch {
		case e.failed[s.Instance] != failed:
			// A forward failed while this poll was out: that is newer news than the
			// poll's; the next poll decides whether the engine is back.
		case ns.Err != "":
			ns.Failures = cur.Failures + 1
			ns.Down = ns.Failures >= DownAfter
			*cur = ns
		default:
			ns.Failures, ns.Down = 0, false
			*cur = ns
		}
		e.mu.Unlock()
	}
}

// fail records that instance's engine failed a forward before answering: a refused or
// broken connection, or a 5xx, is the engine down, not a hiccup, so it counts as DownAfter
// failed polls at once. The next successful poll brings it back.
func (e *Engines) fail(instance, msg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.state[instance]
	if !ok {
		return
	}
	e.failed[instance]++
	s.Err = msg
	s.Failures = max(s.Failures+1, DownAfter)
	s.Down = true
}

func (e *Engines) get(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("GET %s: status %d", u, resp.StatusCode)
	}
	return b, nil
}

// poll reads an engine's served model (GET /v1/models, once) and its queue gauges.
func (e *Engines) poll(ctx context.Context, s EngineState) EngineState {
	s.Err = ""
	if s.Model == "" {
		b, err := e.get(ctx, s.URL+"/v1/models")
		if err != nil {
			s.Err = err.Error()
			return s
		}
		var ms struct{ Data []struct{ ID string } }
		if err := json.Unmarshal(b, &ms); err != nil || len(ms.Data) == 0 {
			s.Err = fmt.Sprintf("GET %s/v1/models: no model listed", s.URL)
			return s
		}
		s.Model = ms.Data[0].ID
	}
	b, err := e.get(ctx, s.URL+"/metrics")
	if err != nil {
		s.Err = err.Error()
		return s
	}
	g, err := ParseGauges(b, "vllm:num_requests_waiting", "vllm:num_requests_running")
	if err != nil {
		s.Err = fmt.Sprintf("GET %s/metrics: %v", s.URL, err)
		return s
	}
	s.Waiting, s.Running = g["vllm:num_requests_waiting"], g["vllm:num_requests_running"]
	s.Polled = time.Now().UnixMilli()
	return s
}

// ParseGauges sums the samples of the named metrics in a Prometheus text exposition (an
// engine serving several models reports one sample per model_name label), parsed by the
// Prometheus library's own text parser: gauges, counters and untyped
// samples; a name the exposition lacks is absent from the map. An exposition the parser
// refuses (a malformed line, a family declared twice) is an error, not a partial reading.
func ParseGauges(text []byte, names ...string) (map[string]float64, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("parsing the metrics: %w", err)
	}
	out := map[string]float64{}
	for _, n := range names {
		f, ok := fams[n]
		if !ok {
			continue
		}
		var sum float64
		for _, m := range f.GetMetric() {
			switch {
			case m.Gauge != nil:
				sum += m.GetGauge().GetValue()
			case m.Counter != nil:
				sum += m.GetCounter().GetValue()
			case m.Untyped != nil:
				sum += m.GetUntyped().GetValue()
			}
		}
		out[n] = sum
	}
	return out, nil
}

// observeEngines hands the engines' gauges to the serving policy when it is an
// InstanceObserver (one driver command per poll round). An engine whose last poll failed
// counts as holding nothing: stale gauges would keep an instance looking busy.
func observeEngines(s *serve.Server, es []EngineState) {
	s.WithPolicy(func(now dataplane.Time, p dataplane.Policy) {
		o, ok := p.(InstanceObserver)
		if !ok {
			return
		}
		for _, e := range es {
			w, r := e.Waiting, e.Running
			if e.Err != "" || e.Polled == 0 {
				w, r = 0, 0
			}
			o.ObserveInstance(now, e.Instance, w, r)
		}
	})
}
