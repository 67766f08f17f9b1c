package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/serve"
)

// Frontend is the OpenAI-compatible API as a serve.Frontend. Kind is the deployment kind it
// serves (QLM's): while the active plan is another system's, its routes answer 404 with an
// error saying so. Its settings are its exported fields, at their defaults from New; those
// with a `flag` tag are `plan serve` flags (serve.FrontendOptions, internal/base/optflag).
type Frontend struct {
	Kind string
	// QueueDir is the embedded JetStream server's store ("": DefaultQueueDir of the server's
	// address, set by Configure); QueueURL an external server instead.
	QueueDir string `flag:"queue-dir" help:"directory of the embedded NATS JetStream server holding the OpenAI API's batch queue (POST /v1/queue) (default $XDG_STATE_HOME/plan/queue/ADDR, else ~/.local/state/plan/queue/ADDR: one per --addr)"`
	QueueURL string `flag:"queue-url" help:"external NATS JetStream server for the batch queue (nats://host:4222[,nats://...]); replaces --queue-dir"`
	// QueueResultTTL is how long a queued request's status and result are kept after its
	// last change (0: forever; see DefaultResultTTL).
	QueueResultTTL time.Duration `flag:"queue-result-ttl" help:"how long a queued request's status and result are kept after its last change (0: forever); longer than any request waits in the queue"`
	// QueueWorkers bounds the queued requests submitted to the engine at once; 0 makes a
	// server that accepts and answers polls but serves none (another `plan serve` on the same
	// --queue-url does).
	QueueWorkers int `flag:"queue-workers" help:"queued requests handed to the engine at once (0: accept and answer polls only)"`
	// NewQueue, when set, replaces JetStream (tests: NewMemQueue).
	NewQueue func() (Queue, error)
	// MaxBody bounds a request body (default 4 MiB).
	MaxBody int64
	// QueueLease is the JetStream queue's lease (0: DefaultLease): a queued request whose
	// worker stops extending it (a crash) is handed out again after it, and then runs only
	// if it had not started: one marked running is recorded failed ("interrupted"), so a
	// request runs at most once.
	QueueLease time.Duration `flag:"queue-lease" help:"lease of a queued request on its worker, extended while it runs: after a crash, requests not yet started are served once the lease ends; one that had started is failed with code interrupted, never run twice"`
	// Endpoints maps instances to remote OpenAI-compatible engines (--llm-endpoints); empty:
	// the instances are the server's own (emulated) workers. Poll is how often their
	// /metrics are read.
	Endpoints EndpointList  `flag:"llm-endpoints" help:"QLM instances served by remote OpenAI-compatible engines (vLLM): INSTANCE=URL,... (the plan schedules, the engines generate; their /metrics queue gauges at GET /v1/engines)"`
	Poll      time.Duration `flag:"llm-poll" help:"how often the --llm-endpoints engines' /metrics are read"`

	// The handler's own state. Routes sets s, the server requests are submitted to,
	// started, when it ran (the server's start, every model's `created`), and ids' start,
	// before any request; then they are only read. ids makes the answers' and queued
	// requests' ids; limits caches the plan's per-class limits, under its own mutex.
	s       *serve.Server
	started time.Time
	ids     ids
	limits  limitCache

	// batch is the batch queue's state (batch.go), fwd the way to the remote engines,
	// off without --llm-endpoints (forwarder.go): each guards its own.
	batch batchQueue
	fwd   forwarder
}

// New returns the front end for deployments of kind.
func New(kind string) *Frontend {
	return &Frontend{Kind: kind, QueueWorkers: 32, QueueResultTTL: DefaultResultTTL,
		QueueLease: DefaultLease, Endpoints: EndpointList{}, Poll: time.Second}
}

// Options implements serve.FrontendOptions: the Frontend's own tagged fields.
func (f *Frontend) Options() any { return f }

// BodyLimits implements serve.BodyLimiter: the server refuses a body over MaxBody with 413
// before the handler runs, on every route that takes one.
func (f *Frontend) BodyLimits() map[string]int64 {
	n := f.MaxBody
	if n <= 0 {
		n = 4 << 20
	}
	return map[string]int64{"POST /v1/completions": n, "POST /v1/chat/completions": n, "POST /v1/queue": n}
}

// Routes implements serve.Frontend.
func (f *Frontend) Routes(s *serve.Server, mux *http.ServeMux) {
	f.s = s
	if f.MaxBody <= 0 {
		f.MaxBody = 4 << 20
	}
	// Ids are unique across restarts (the queue outlives the process): the start time in
	// base 36, then a counter. The start time is also the models' `created`.
	f.started = time.Now()
	f.ids.start = strconv.FormatInt(f.started.UnixNano(), 36)
	rs := f.routes()
	for _, r := range rs[:len(rs)-1] {
		mux.HandleFunc(r.Pattern, r.h)
	}
	// Every other path under /v1/ answers an OpenAI error object too.
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) { f.handleUnknown(w, r, mux) })
	if len(f.Endpoints) > 0 {
		f.fwd.start(s, f.Endpoints, max(f.Poll, 10*time.Millisecond))
		r := rs[len(rs)-1]
		mux.HandleFunc(r.Pattern, r.h)
	}
	// A server that starts on a plan of this kind opens its queue at once, so requests left
	// from the last run are served without waiting for a client.
	if d := s.Deployment(); d != nil && d.Kind == f.Kind {
		f.openInBackground()
	}
}

// Close implements io.Closer: the queue workers put back what they hold, then the queue
// closes.
func (f *Frontend) Close() error {
	q := f.batch.close()
	f.fwd.close()
	if q != nil {
		return q.Close()
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, e *Error) {
	if e.Close {
		w.Header().Set("Connection", "close")
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt(e.RetryAfter, 10))
	}
	writeJSON(w, e.Status, errorBody{e})
}

// active checks that the plan being served is this front end's system's.
func (f *Frontend) active() *Error {
	d := f.s.Deployment()
	if d == nil || d.Kind != f.Kind {
		kind := "none"
		if d != nil {
			kind = d.Kind
		}
		return &Error{Status: 404, Type: "not_found_error", Code: "model_not_found",
			Message: fmt.Sprintf("the OpenAI API serves %s plans; the active plan is a %s plan", f.Kind, kind)}
	}
	return nil
}

// read reads and decodes a request body.
func (f *Frontend) read(w http.ResponseWriter, r *http.Request, chat bool) (*Request, []byte, *Error) {
	if e := f.active(); e != nil {
		return nil, nil, e
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, f.MaxBody))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return nil, nil, &Error{Status: 413, Type: "invalid_request_error", Message: fmt.Sprintf("the body is larger than %d bytes", mb.Limit)}
		}
		return nil, nil, badRequest("", "reading the body: %v", err)
	}
	req, e := decode(body, chat)
	if e != nil {
		return nil, nil, e
	}
	if !f.fwd.on() && req.logprobs != "" {
		return nil, nil, noLogprobs(req)
	}
	if f.fwd.on() {
		// A request goes whole to the engine of the instance QLM placed its one sequence on
		// (remote): its emulated copy, which QLM schedules, is that one sequence.
		if req.N > 1 {
			return nil, nil, badRequest("n", "n: %d: with --llm-endpoints a request is one sequence on one engine, as the plan schedules it; ask for one choice per request", req.N)
		}
		if len(req.Prompts) > 1 {
			return nil, nil, badRequest("prompt", "prompt: an array of %d prompts: with --llm-endpoints a request is one sequence on one engine, as the plan schedules it; send one request per prompt", len(req.Prompts))
		}
	}
	if !f.known(req.Model) {
		return nil, nil, f.unknown(req.Model)
	}
	if e := f.checkAllLimits(req); e != nil {
		return nil, nil, e
	}
	return req, body, nil
}

// checkAllLimits is checkLimits for each of req's prompts.
func (f *Frontend) checkAllLimits(req *Request) *Error {
	for _, p := range req.perPrompt() {
		if e := f.checkLimits(p); e != nil {
			return e
		}
	}
	return nil
}

func (f *Frontend) known(model string) bool {
	for _, a := range f.s.Deployment().Apps {
		if a.Name == model {
			return true
		}
	}
	return false
}

func (f *Frontend) unknown(model string) *Error {
	var names []string
	for _, a := range f.s.Deployment().Apps {
		names = append(names, a.Name)
	}
	return &Error{Status: 404, Type: "not_found_error", Param: "model", Code: "model_not_found",
		Message: fmt.Sprintf("model: %q: not served here (models: %s)", model, strings.Join(names, ", "))}
}

// submission is one sequence's way through the engine: a choice of a request.
type submission struct {
	// req is the request for the choice's prompt (Request.perPrompt); id its engine id.
	req *Request
	id  string
	// group ties the choices of one prompt (n > 1) for the metrics vLLM keeps per request.
	group *serve.ChoiceGroup
	// tokens counts the request's finished iterations (OnHop): each yields one token;
	// worker is the instance of the latest: where QLM has the request now, which changes
	// when a failed instance's requests are re-queued on live ones (QLM §7).
	mu     sync.Mutex
	tokens int
	worker string
	tick   chan struct{}
}

// delivered is the tokens the engine delivered to the choice so far, never past max_tokens
// (a preempted request's recomputed iterations yield none).
func (sub *submission) delivered() int {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if limit := sub.req.MaxTokens; limit > 0 {
		return min(sub.tokens, limit)
	}
	return sub.tokens
}

// output is the choice's output length once it finished (completionTokens).
func (sub *submission) output() int {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	return completionTokens(sub.req, sub.tokens)
}

// ids makes the ids of answers and queued requests: a kind's prefix, start, a dash, then a
// counter. start is the server's start time in base 36, set by Routes before any request,
// so that ids are unique across restarts (the queue outlives the process).
type ids struct {
	start string
	seq   atomic.Uint64
}

func (g *ids) next(prefix string) string {
	return prefix + g.start + "-" + strconv.FormatUint(g.seq.Add(1), 10)
}

func (f *Frontend) newID(chat bool) string {
	p := "cmpl-"
	if chat {
		p = "chatcmpl-"
	}
	return f.ids.next(p)
}

// choices are req's sequences, one per choice in the order of the answer's index: prompt
// i's n choices are i·n … i·n+n−1, as vLLM orders them. They share one tick channel (a
// stream wakes for any of them). With several choices, each engine id is id-<index>.
func choices(req *Request, id string) []*submission {
	per := req.perPrompt()
	subs := make([]*submission, 0, len(per)*req.N)
	tick := make(chan struct{}, 1)
	for _, p := range per {
		var grp *serve.ChoiceGroup
		if req.N > 1 {
			grp = serve.NewChoiceGroup(req.N)
		}
		for range req.N {
			subs = append(subs, &submission{req: p, id: id, group: grp, tick: tick})
		}
	}
	if len(subs) > 1 {
		for i, sub := range subs {
			sub.id = id + "-" + strconv.Itoa(i)
		}
	}
	return subs
}

// runAll serves every choice and waits for them all. The first that fails (ctx ended, or the
// engine's failure) ends the others, since the client gets one answer, and is returned.
func (f *Frontend) runAll(ctx context.Context, subs []*submission, arrived time.Time) error {
	if len(subs) == 1 {
		return f.submit(ctx, subs[0], arrived)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, len(subs))
	for _, sub := range subs {
		go func() { done <- f.submit(ctx, sub, arrived) }()
	}
	var fail error
	for range subs {
		if err := <-done; err != nil && fail == nil {
			fail = err
			cancel()
		}
	}
	return fail
}

// submit runs req through Server.Submit with its attributes; QLM reads InTokens and OutTokens
// (0: drawn from the class profile, a normal truncated to [1, max], as the paper's normal
// lengths can go negative) for its RCT estimate (QLM §6). An answer other than 200 is
// returned as a *failure, made here from the answer; ctx ending, as ctx's error.
func (f *Frontend) submit(ctx context.Context, sub *submission, arrived time.Time) error {
	a, err := f.s.Submit(ctx, serve.Request{Model: sub.req.Model, ID: sub.id, Arrived: arrived,
		Attrs:         dataplane.Attrs{Class: sub.req.Class, Priority: sub.req.Priority, InTokens: int32(sub.req.PromptTokens), OutTokens: int32(sub.req.MaxTokens)},
		RefusedStatus: refusedStatus, Choices: sub.group,
		OnHop: func(h serve.HopEvent) {
			sub.mu.Lock()
			if h.HasTokens {
				sub.tokens = max(sub.tokens, h.Tokens)
			} else {
				sub.tokens++
			}
			if h.Worker != "" { // a policy timer's tokens name no worker
				sub.worker = h.Worker
			}
			sub.mu.Unlock()
			select {
			case sub.tick <- struct{}{}:
			default:
			}
		}})
	if err != nil {
		return err
	}
	if a.Status != 200 {
		return newFailure(a)
	}
	return nil
}

func (f *Frontend) handleCompletion(w http.ResponseWriter, r *http.Request, chat bool) {
	arrived := time.Now()
	req, body, e := f.read(w, r, chat)
	if e != nil {
		writeError(w, e)
		return
	}
	id := f.newID(chat)
	subs := choices(req, id)
	if f.fwd.on() {
		f.remote(w, r, subs[0], arrived, body) // one choice (Frontend.read)
		return
	}
	if req.Stream {
		f.stream(w, r, req, id, subs, arrived)
		return
	}
	err := f.runAll(r.Context(), subs, arrived)
	if r.Context().Err() != nil {
		return // the client left: nothing to answer (Submit cancelled the request)
	}
	if err != nil {
		writeError(w, apiError(err))
		return
	}
	writeJSON(w, 200, response(req, id, arrived.Unix(), subs))
}
