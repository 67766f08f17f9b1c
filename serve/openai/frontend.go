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
	"github.com/plan-dev/plan/dataplane/llm"
	dq "github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/serve"
)

// Frontend is the OpenAI-compatible API as a serve.Frontend. Kind is the deployment kind it
// serves (QLM's): while the active plan is another system's, its routes answer 404 with an
// error saying so. Its settings are its exported fields, at their defaults from New; those
// with a `flag` tag are `plan serve` flags (serve.FrontendOptions, internal/optflag).
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

	engines       *Engines
	forwardClient *http.Client
	// down holds the instances failed in the engine because their remote engine is down;
	// markMu orders the changes (Frontend.syncDown). marked, when set, is told of each (tests).
	markMu sync.Mutex
	downMu sync.Mutex
	down   map[string]bool
	marked func(instance string, down bool)

	s      *serve.Server
	seq    atomic.Uint64
	prefix string
	// started is when Routes ran: the server's start, every model's `created`.
	started time.Time

	limits limitCache

	qmu    sync.Mutex
	openMu sync.Mutex // one opening of the queue at a time (queue_open.go)
	q      Queue
	// qerr is the last failure to open the queue, at qerrAt: answered without a new try
	// for queueRetry; opening says the open loop runs (queue_open.go).
	qerr     error
	qerrAt   time.Time
	opening  bool
	openStop context.CancelFunc
	openWG   sync.WaitGroup
	stop     context.CancelFunc
	wg       sync.WaitGroup
	closed   bool
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
	f.prefix = strconv.FormatInt(f.started.UnixNano(), 36)
	rs := f.routes()
	for _, r := range rs[:len(rs)-1] {
		mux.HandleFunc(r.Pattern, r.h)
	}
	// Every other path under /v1/ answers an OpenAI error object too.
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) { f.handleUnknown(w, r, mux) })
	if len(f.Endpoints) > 0 {
		f.forwardClient = &http.Client{}
		f.engines = newEngines(f.Endpoints, nil, func(es []EngineState) {
			observeEngines(s, es)
			f.markDown(s)
		})
		f.engines.start(max(f.Poll, 10*time.Millisecond))
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
	f.qmu.Lock()
	f.closed = true
	q, stop, openStop := f.q, f.stop, f.openStop
	f.qmu.Unlock()
	if openStop != nil {
		openStop()
	}
	f.openWG.Wait()
	if stop != nil {
		stop()
	}
	f.wg.Wait()
	if f.engines != nil {
		f.engines.Close()
	}
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
	writeJSON(w, e.Status, map[string]*Error{"error": e})
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
	if f.engines == nil && req.logprobs != "" {
		return nil, nil, noLogprobs(req)
	}
	if f.engines != nil {
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

func (f *Frontend) newID(chat bool) string {
	p := "cmpl-"
	if chat {
		p = "chatcmpl-"
	}
	return p + f.prefix + "-" + strconv.FormatUint(f.seq.Add(1), 10)
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

// runAll serves every choice and waits for them all. The first that fails (ctx ended, or an
// answer other than 200) ends the others, since the client gets one answer, and is returned;
// otherwise an answer of the last to finish.
func (f *Frontend) runAll(ctx context.Context, subs []*submission, arrived time.Time) (*serve.Answer, error) {
	if len(subs) == 1 {
		return f.submit(ctx, subs[0], arrived)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan outcome, len(subs))
	for _, sub := range subs {
		go func() {
			a, err := f.submit(ctx, sub, arrived)
			done <- outcome{a, err}
		}()
	}
	var fail, ok *outcome
	for range subs {
		o := <-done
		switch {
		case o.err == nil && o.a.Status == 200:
			ok = &o
		case fail == nil:
			fail = &o
			cancel()
		}
	}
	if fail != nil {
		return fail.a, fail.err
	}
	return ok.a, nil
}

// submit runs req through Server.Submit with its attributes; QLM reads InTokens and OutTokens
// (0: drawn from the class profile, a normal truncated to [1, max], as the paper's normal
// lengths can go negative) for its RCT estimate (QLM §6).
func (f *Frontend) submit(ctx context.Context, sub *submission, arrived time.Time) (*serve.Answer, error) {
	return f.s.Submit(ctx, serve.Request{Model: sub.req.Model, ID: sub.id, Arrived: arrived,
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
}

// refusedStatus is the status a request refused at intake is answered with (answerError):
// 503 while shutting down, else 429 (the door reopens after Retry-After). Submit counts the
// refusal under it (serve.Request.RefusedStatus), so plan_rejected_total{code} says 429 too.
func refusedStatus(reason string) int {
	if reason == string(dataplane.DropShutdown) {
		return 503
	}
	return 429
}

// answerError maps a non-200 answer to an OpenAI error: refused at the door → 429 (the door
// reopens after Retry-After), dropped by the policy or shutting down → 503.
func answerError(a *serve.Answer) *Error {
	switch a.Status {
	case 400:
		return badRequest("", "%s", a.Err)
	case 404:
		return &Error{Status: 404, Type: "not_found_error", Param: "model", Code: "model_not_found", Message: a.Err}
	case 503:
		e := &Error{Status: 503, Type: "server_error", Code: a.Reason,
			Message: fmt.Sprintf("dropped (%s at %s): %s", a.Reason, a.Stage, a.Err), RetryAfter: 1}
		if a.Stage == "intake" && refusedStatus(a.Reason) == 429 {
			e.Status, e.Type = 429, "rate_limit_error"
			e.RetryAfter = max(1, (a.RetryUs+999_999)/1_000_000)
		}
		if e.Message == fmt.Sprintf("dropped (%s at %s): ", a.Reason, a.Stage) {
			e.Message = fmt.Sprintf("dropped (%s at %s)", a.Reason, a.Stage)
		}
		switch a.Reason {
		case string(dataplane.DropShutdown):
			e.Close = true
		case string(dq.DropWouldBeLate):
			// Admission at the door (llm.Judge): the engine as it stands would finish the
			// request after its SLO, or make a request it admitted late. Like a rate limit,
			// the door reopens once the work ahead has drained: Retry-After is that
			// predicted wait (the drop's estimate), rounded up.
			e.Status, e.Type, e.Code = 429, "rate_limit_error", "would_finish_late"
			e.RetryAfter = llm.RetryAfter(dataplane.Time(a.EstimateUs))
			e.Message = fmt.Sprintf("rejected: would finish late: the engine, with the requests running and queued ahead, would finish this request after its SLO (or make an admitted request late); retry after %d s", e.RetryAfter)
		case string(dq.DropTooLarge):
			// The engine's own refusal of what can never fit (checkLimits refuses it first
			// when the plan gives the limits).
			e.Status, e.Type, e.RetryAfter = 400, "invalid_request_error", 0
		}
		return e
	}
	return &Error{Status: 500, Type: "server_error", Message: a.Err}
}

// completionTokens is the answer's output length: max_tokens when given (the engine generated
// exactly that many), else the iterations the request took.
func completionTokens(req *Request, hops int) int {
	if req.MaxTokens > 0 {
		return req.MaxTokens
	}
	return max(hops, 1)
}

func finishReason(req *Request) string {
	if req.MaxTokens > 0 {
		return "length"
	}
	return "stop"
}

// Usage is the token accounting of an answer.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func usage(req *Request, out int) *Usage {
	return &Usage{PromptTokens: req.PromptTokens, CompletionTokens: out, TotalTokens: req.PromptTokens + out}
}

// totalUsage is the usage of a whole answer whose choices generated outs: every prompt's
// tokens once, however many choices it has (n), and every choice's output (as vLLM counts).
func totalUsage(req *Request, subs []*submission, outs []int) *Usage {
	var u Usage
	for i, sub := range subs {
		if i%req.N == 0 {
			u.PromptTokens += sub.req.PromptTokens
		}
		u.CompletionTokens += outs[i]
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return &u
}

// outputs are the choices' output lengths once they have finished.
func outputs(subs []*submission) []int {
	outs := make([]int, len(subs))
	for i, sub := range subs {
		sub.mu.Lock()
		outs[i] = completionTokens(sub.req, sub.tokens)
		sub.mu.Unlock()
	}
	return outs
}

// response builds the whole (non-streaming) answer of finished choices subs.
func response(req *Request, id string, created int64, subs []*submission) map[string]any {
	object := "text_completion"
	if req.Chat {
		object = "chat.completion"
	}
	outs := outputs(subs)
	cs := make([]any, len(subs))
	for i, sub := range subs {
		choice := map[string]any{"index": i, "finish_reason": finishReason(sub.req)}
		if req.Chat {
			choice["message"] = map[string]any{"role": "assistant", "content": Filler(0, outs[i])}
		} else {
			choice["text"] = Filler(0, outs[i])
			choice["logprobs"] = nil
		}
		cs[i] = choice
	}
	return map[string]any{"id": id, "object": object, "created": created, "model": req.Model,
		"choices": cs, "usage": totalUsage(req, subs, outs)}
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
	if f.engines != nil {
		f.remote(w, r, subs[0], arrived, body) // one choice (Frontend.read)
		return
	}
	if req.Stream {
		f.stream(w, r, req, id, subs, arrived)
		return
	}
	a, err := f.runAll(r.Context(), subs, arrived)
	if r.Context().Err() != nil {
		return // the client left: nothing to answer (Submit cancelled the request)
	}
	if err != nil {
		writeError(w, &Error{Status: 503, Type: "server_error", Message: err.Error(), Close: true})
		return
	}
	if a.Status != 200 {
		writeError(w, answerError(a))
		return
	}
	writeJSON(w, 200, response(req, id, arrived.Unix(), subs))
}

// stream answers with server-sent events: a chunk of filler text for every token as the
// engine delivers it (its output step, not the step that computed it: the same times as the
// simulator's stamps, whatever max_tokens), each with its choice's index, a last chunk per
// choice with its finish reason, the usage chunk when asked (stream_options.include_usage)
// once every choice has finished, then [DONE]. The status line waits for the first token of
// any choice, so a request dropped before any is an ordinary error answer; a choice that
// fails later ends the others and the stream with an error event.
func (f *Frontend) stream(w http.ResponseWriter, r *http.Request, req *Request, id string, subs []*submission, arrived time.Time) {
	// Returning cancels the choices still running: the client is gone, or the answer is
	// an error already.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	type ended struct {
		i int
		outcome
	}
	done := make(chan ended, len(subs))
	for i, sub := range subs {
		go func() {
			a, err := f.submit(ctx, sub, arrived)
			done <- ended{i, outcome{a, err}}
		}()
	}
	rc := http.NewResponseController(w)
	wt := f.s.WriteTimeout()
	started := false
	// sent[i] is the tokens of choice i sent; outs[i] its output once it finished.
	sent, outs := make([]int, len(subs)), make([]int, len(subs))
	finished := make([]bool, len(subs))
	left := len(subs)
	object := "text_completion"
	if req.Chat {
		object = "chat.completion.chunk"
	}
	created := arrived.Unix()
	// Each write gets --write-timeout: a client that stops reading its stream fails the
	// write instead of holding this handler and its connection until the generation ends.
	// After a failed write nothing more is sent, and the choices are cancelled.
	var werr error
	write := func(op func() error) {
		if werr == nil {
			_ = rc.SetWriteDeadline(time.Now().Add(wt))
			werr = op()
		}
	}
	event := func(v any) {
		b, _ := json.Marshal(v)
		write(func() error { _, err := fmt.Fprintf(w, "data: %s\n\n", b); return err })
	}
	flush := func() { write(rc.Flush) }
	// chunk is one stream event of choice i; upto is the completion tokens of the choice
	// sent once it is, which stream_options.continuous_usage_stats reports in every chunk
	// (vLLM's extension).
	chunk := func(i int, text string, finish any, first bool, upto int) map[string]any {
		c := map[string]any{"index": i, "finish_reason": finish}
		if req.Chat {
			d := map[string]any{}
			if first {
				d["role"] = "assistant"
			}
			if text != "" || !first {
				d["content"] = text
			}
			c["delta"] = d
		} else {
			c["text"] = text
			c["logprobs"] = nil
		}
		ev := map[string]any{"id": id, "object": object, "created": created, "model": req.Model, "choices": []any{c}}
		if req.ContinuousUsage {
			ev["usage"] = usage(subs[i].req, upto)
		}
		return ev
	}
	start := func() {
		if started {
			return
		}
		started = true
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		w.WriteHeader(200)
	}
	// send writes choice i's tokens sent+1..n, one chunk each: the engine delivers one
	// token per sequence per step (LLM engine digest §2.5), and benchmark clients (vLLM's
	// benchmark_serving, plan load) take every chunk for a token when they time the
	// inter-token latency (§3). Tokens that reach the handler together (the driver's ticks
	// coalesce while this goroutine waits) still go as one chunk each, written together.
	send := func(i, n int) {
		if n <= sent[i] {
			return
		}
		start()
		for ; sent[i] < n; sent[i]++ {
			event(chunk(i, Filler(sent[i], sent[i]+1), nil, sent[i] == 0, sent[i]+1))
		}
	}
	// emit sends the tokens the engine delivered to choice i since its last chunk (never
	// past max_tokens: a preempted request's recomputed iterations yield none); it reports
	// whether it sent any.
	emit := func(i int) bool {
		sub := subs[i]
		sub.mu.Lock()
		n := sub.tokens
		sub.mu.Unlock()
		if limit := sub.req.MaxTokens; limit > 0 {
			n = min(n, limit)
		}
		if n <= sent[i] {
			return false
		}
		send(i, n)
		return true
	}
	tick := subs[0].tick // shared by the choices (choices)
	for {
		select {
		case <-r.Context().Done():
			// The client left (or its deadline passed): stop writing; Submit, on the same
			// context, cancels the choices in the engine, which frees their sequences
			// within an iteration.
			return
		case <-tick:
			wrote := false
			for i := range subs {
				if !finished[i] && emit(i) {
					wrote = true
				}
			}
			if wrote {
				flush()
			}
			if werr != nil {
				return
			}
		case o := <-done:
			if o.err == nil && o.a.Status == 200 {
				sub := subs[o.i]
				sub.mu.Lock()
				out := completionTokens(sub.req, sub.tokens)
				sub.mu.Unlock()
				emit(o.i)
				send(o.i, out)
				start()
				event(chunk(o.i, "", finishReason(sub.req), false, out))
				finished[o.i], outs[o.i] = true, out
				if left--; left > 0 {
					flush()
					if werr != nil {
						return
					}
					continue
				}
				if req.IncludeUsage {
					event(map[string]any{"id": id, "object": object, "created": created, "model": req.Model,
						"choices": []any{}, "usage": totalUsage(req, subs, outs)})
				}
			} else {
				e := &Error{Status: 503, Type: "server_error", Close: true}
				if o.err != nil {
					if r.Context().Err() != nil {
						return
					}
					e.Message = o.err.Error()
				} else {
					e = answerError(o.a)
				}
				if !started {
					writeError(w, e)
					return
				}
				event(map[string]*Error{"error": e})
			}
			write(func() error { _, err := io.WriteString(w, "data: [DONE]\n\n"); return err })
			flush()
			return
		}
	}
}

// outcome is an emulated request's end (Server.Submit's results).
type outcome struct {
	a   *serve.Answer
	err error
}

// emulate runs the request through the engine until it ends or ctx does: its emulated copy
// is the engine's model of the instance's occupancy while the remote engine generates, so it
// outlives the client's answer and ends early only with the remote request (remote).
func (f *Frontend) emulate(ctx context.Context, sub *submission, arrived time.Time) <-chan outcome {
	done := make(chan outcome, 1)
	go func() {
		a, err := f.submit(ctx, sub, arrived)
		done <- outcome{a, err}
	}()
	return done
}

// remote serves a request on a remote engine: the QLM engine admits and orders it, and
// when it dispatches the request to an instance (its first iteration) the request goes to
// that instance's engine. A request dropped before is answered with the drop.
//
// An engine that fails before answering fails its instance in the engine (engineFailed),
// which re-queues the request's emulated copy on a live instance (QLM §7); the request then
// goes to that instance's engine when the copy's next iteration runs there. An instance is
// tried once; the client's context bounds the wait. A copy that QLM drops instead (no live
// instance can serve the model) is answered with the drop; one that had already finished on
// the failed instance is submitted again, so that QLM places it anew.
func (f *Frontend) remote(w http.ResponseWriter, r *http.Request, sub *submission, arrived time.Time, body []byte) {
	path := "/v1/completions"
	if sub.req.Chat {
		path = "/v1/chat/completions"
	}
	tried := map[string]bool{}
	var failures []string
	// next is the instance to forward to: the one holding the emulated copy, unless it is
	// down or its engine already failed this request.
	next := func() string {
		sub.mu.Lock()
		inst := sub.worker
		sub.mu.Unlock()
		if inst == "" || tried[inst] || f.isDown(inst) {
			return ""
		}
		return inst
	}
	// The copy runs past the answer (the engine's occupancy), but a client that leaves before
	// its answer ends takes the remote request with it (vLLM aborts a request whose client
	// disconnected, LLM engine digest §4; forward's request shares r's context): the copy is
	// cancelled then, so QLM frees its sequence too.
	copyCtx, cancelCopy := context.WithCancel(context.WithoutCancel(r.Context()))
	defer func() {
		if r.Context().Err() != nil {
			cancelCopy()
		}
	}()
	done := f.emulate(copyCtx, sub, arrived)
	var end *outcome
	resubmits := 0
	for {
		inst := next()
		if inst == "" && end == nil {
			select {
			case <-sub.tick:
			case o := <-done:
				end = &o
			case <-r.Context().Done():
				return
			}
			continue
		}
		if inst == "" {
			// The emulated copy ended where no engine can take the request.
			switch {
			case end.err != nil:
				writeError(w, &Error{Status: 503, Type: "server_error", Message: end.err.Error()})
			case end.a.Status != 200:
				writeError(w, answerError(end.a))
			case resubmits < len(f.Endpoints):
				resubmits++
				done, end = f.emulate(copyCtx, sub, arrived), nil
				continue
			default:
				msg := "no engine could serve the request"
				if len(failures) > 0 {
					msg += ": " + strings.Join(failures, "; ")
				}
				writeError(w, &Error{Status: 502, Type: "server_error", Code: "engine_failed", Message: msg})
			}
			return
		}
		err := f.forward(w, r, inst, path, body)
		if err == nil {
			return
		}
		tried[inst] = true
		failures = append(failures, err.Error())
		f.engineFailed(inst, err)
	}
}

// fillerWords are the emulated instances' generated text: the engine emulates an LLM's timing,
// not its words, so token i of every answer is fillerWords[i mod len] (deterministic).
var fillerWords = []string{" lorem", " ipsum", " dolor", " sit", " amet", ",", " consectetur", " adipiscing", " elit", "."}

// Filler is the generated text of tokens [from, to).
func Filler(from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		b.WriteString(fillerWords[i%len(fillerWords)])
	}
	return b.String()
}
