package openai

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/plan-dev/plan/internal/base/buildinfo"
	"github.com/plan-dev/plan/serve"
)

// route is a documented route and its handler.
type route struct {
	serve.RouteDoc
	h http.HandlerFunc
}

// routes is the table Routes registers and RouteDocs documents: the OpenAI API's routes, then
// GET /v1/engines, last, registered only with --llm-endpoints. A model id may hold '/' (a
// Hugging Face id, as vLLM serves them), hence {id...}.
func (f *Frontend) routes() []route {
	return []route{
		{serve.RouteDoc{Pattern: "GET /health", Doc: "200 when the server takes requests, else 503 (vLLM's health check, which GuideLLM and vllm bench probe)"}, f.handleHealth},
		{serve.RouteDoc{Pattern: "GET /version", Doc: "the server's version (vLLM's {\"version\"})"}, f.handleVersion},
		{serve.RouteDoc{Pattern: "GET /v1/models", Doc: "the models the plan serves (OpenAI API)"}, f.handleModels},
		{serve.RouteDoc{Pattern: "GET /v1/models/{id...}", Doc: "one model (OpenAI API; 404 for an id not served)"}, f.handleModel},
		{serve.RouteDoc{Pattern: "POST /v1/completions", Doc: "a completion (OpenAI API)"},
			func(w http.ResponseWriter, r *http.Request) { f.handleCompletion(w, r, false) }},
		{serve.RouteDoc{Pattern: "POST /v1/chat/completions", Doc: "a chat completion (OpenAI API)"},
			func(w http.ResponseWriter, r *http.Request) { f.handleCompletion(w, r, true) }},
		{serve.RouteDoc{Pattern: "POST /v1/queue", Doc: "enqueue a batch request in the durable queue; answers its id"}, f.handleEnqueue},
		{serve.RouteDoc{Pattern: "GET /v1/queue/{id}", Doc: "a queued request's state and answer"}, f.handleQueueGet},
		{serve.RouteDoc{Pattern: "GET /v1/engines", Doc: "the --llm-endpoints engines' state (with --llm-endpoints)"}, func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, 200, list[EngineState]{Data: f.fwd.engines.All(), Object: "list"})
		}},
	}
}

// RouteDocs implements serve.FrontendRoutes.
func (f *Frontend) RouteDocs() []serve.RouteDoc {
	var out []serve.RouteDoc
	for _, r := range f.routes() {
		out = append(out, r.RouteDoc)
	}
	return out
}

// Model is one entry of GET /v1/models and the answer of GET /v1/models/{id} (ecosystem
// digest §5). Created is the server's start (Unix seconds): a plan carries no creation time,
// and a value that changed per call would tell a client's cache the model list changed.
type Model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func (f *Frontend) model(name string) Model {
	return Model{ID: name, Object: "model", Created: f.started.Unix(), OwnedBy: "plan"}
}

func (f *Frontend) handleModels(w http.ResponseWriter, _ *http.Request) {
	if e := f.active(); e != nil {
		writeError(w, e)
		return
	}
	ms := []Model{}
	for _, a := range f.s.Deployment().Apps {
		ms = append(ms, f.model(a.Name))
	}
	writeJSON(w, 200, list[Model]{Data: ms, Object: "list"})
}

// handleHealth answers vLLM's GET /health: 200 with an empty body when the server is ready
// (the same readiness as GET /v2/health/ready), 503 otherwise.
func (f *Frontend) handleHealth(w http.ResponseWriter, r *http.Request) {
	if err := f.s.Readiness(r.Context()); err != nil {
		writeError(w, &Error{Status: http.StatusServiceUnavailable, Type: "server_error", Message: "not ready: " + err.Error()})
		return
	}
	w.WriteHeader(http.StatusOK)
}

// handleVersion answers vLLM's GET /version with the binary's module version.
func (f *Frontend) handleVersion(w http.ResponseWriter, _ *http.Request) {
	// The version plan version prints (the Makefile's stamp), not the module's "(devel)".
	writeJSON(w, 200, version{buildinfo.Version()})
}

func (f *Frontend) handleModel(w http.ResponseWriter, r *http.Request) {
	if e := f.active(); e != nil {
		writeError(w, e)
		return
	}
	id := r.PathValue("id")
	if !f.known(id) {
		writeError(w, f.unknown(id))
		return
	}
	writeJSON(w, 200, f.model(id))
}

// handleUnknown answers every other path under /v1/ with an OpenAI error object (the
// server's own catch-all answers KServe's {"error": "..."}, which OpenAI clients cannot
// read): 405 with Allow for a known path asked with another method, else 404.
func (f *Frontend) handleUnknown(w http.ResponseWriter, r *http.Request, mux *http.ServeMux) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, p := mux.Handler(probe); p != "" && p != "/" && p != "/v1/" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, &Error{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error", Code: "method_not_allowed",
			Message: fmt.Sprintf("method %s not allowed on %s (allowed: %s)", r.Method, r.URL.Path, strings.Join(allow, ", "))})
		return
	}
	writeError(w, &Error{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "unknown_url",
		Message: fmt.Sprintf("Invalid URL (%s %s): no such endpoint", r.Method, r.URL.Path)})
}

// WriteError implements serve.ErrorWriter: the server's own refusals on this API's routes
// (413 for a declared body over BodyLimits) are OpenAI error objects too.
func (f *Frontend) WriteError(w http.ResponseWriter, status int, msg string) {
	typ := "invalid_request_error"
	if status >= 500 {
		typ = "server_error"
	}
	writeError(w, &Error{Status: status, Type: typ, Message: msg})
}
