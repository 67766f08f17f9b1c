package openai

import (
	"errors"
	"fmt"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
	dq "github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/serve"
)

// How a request the engine did not serve is answered: the engine's verdict (serve.Answer's
// status, reason and stage) becomes a *failure where the answer comes back
// (Frontend.submit), travels as an error through runAll, the stream and the queue worker,
// and is found again with errors.As where the client is answered (apiError): an OpenAI
// error object with its status (ecosystem digest §5: {"error": {message, type, param,
// code}} with 4xx/5xx).

// failure is an answer other than 200, as an error.
type failure struct {
	// status is serve.Answer.Status: 400 (bad input), 404 (unknown model), 503 (dropped or
	// refused, at stage for reason), else a server error.
	status        int
	reason, stage string
	// detail is serve.Answer.Err: what the engine says of the failure ("" when a drop says
	// nothing more than its reason and stage).
	detail string
	// estimateUs is the policy's estimate behind a drop (the predicted wait of a request
	// that would finish late); retryUs how long the door stays closed after a refusal.
	estimateUs, retryUs int64
}

// newFailure is a's verdict (a.Status is not 200).
func newFailure(a *serve.Answer) *failure {
	return &failure{status: a.Status, reason: a.Reason, stage: a.Stage, detail: a.Err,
		estimateUs: a.EstimateUs, retryUs: a.RetryUs}
}

// Error is the failure's message: a drop's reason and stage, then the detail when there is
// one; any other failure's detail.
func (e *failure) Error() string {
	if e.status != 503 {
		return e.detail
	}
	msg := fmt.Sprintf("dropped (%s at %s)", e.reason, e.stage)
	if e.detail != "" {
		msg += ": " + e.detail
	}
	return msg
}

// shutdown reports whether the request was dropped because the server is shutting down.
func (e *failure) shutdown() bool {
	return e.status == 503 && e.reason == string(dataplane.DropShutdown)
}

// apiError is the OpenAI error a failed request is answered with: its failure's, or for any
// other error (the request's context ended while its client waits: the server is going) a
// 503 that closes the connection, so a retry goes elsewhere.
func apiError(err error) *Error {
	var f *failure
	if errors.As(err, &f) {
		return f.openAI()
	}
	return &Error{Status: 503, Type: "server_error", Message: err.Error(), Close: true}
}

// refusedStatus is the status a request refused at intake is answered with (failure.openAI):
// 503 while shutting down, else 429 (the door reopens after Retry-After). Submit counts the
// refusal under it (serve.Request.RefusedStatus), so plan_rejected_total{code} says 429 too.
func refusedStatus(reason string) int {
	if reason == string(dataplane.DropShutdown) {
		return 503
	}
	return 429
}

// openAI maps the failure to an OpenAI error: refused at the door → 429 (the door reopens
// after Retry-After), dropped by the policy or shutting down → 503.
func (e *failure) openAI() *Error {
	switch e.status {
	case 400:
		return badRequest("", "%s", e.detail)
	case 404:
		return &Error{Status: 404, Type: "not_found_error", Param: "model", Code: "model_not_found", Message: e.detail}
	case 503:
		out := &Error{Status: 503, Type: "server_error", Code: e.reason, Message: e.Error(), RetryAfter: 1}
		if e.stage == "intake" && refusedStatus(e.reason) == 429 {
			out.Status, out.Type = 429, "rate_limit_error"
			out.RetryAfter = max(1, (e.retryUs+999_999)/1_000_000)
		}
		switch e.reason {
		case string(dataplane.DropShutdown):
			out.Close = true
		case string(dq.DropWouldBeLate):
			// Admission at the door (llm.Judge): the engine as it stands would finish the
			// request after its SLO, or make a request it admitted late. Like a rate limit,
			// the door reopens once the work ahead has drained: Retry-After is that
			// predicted wait (the drop's estimate), rounded up.
			out.Status, out.Type, out.Code = 429, "rate_limit_error", "would_finish_late"
			out.RetryAfter = llm.RetryAfter(dataplane.Time(e.estimateUs))
			out.Message = fmt.Sprintf("rejected: would finish late: the engine, with the requests running and queued ahead, would finish this request after its SLO (or make an admitted request late); retry after %d s", out.RetryAfter)
		case string(dq.DropTooLarge):
			// The engine's own refusal of what can never fit (checkLimits refuses it first
			// when the plan gives the limits).
			out.Status, out.Type, out.RetryAfter = 400, "invalid_request_error", 0
		}
		return out
	}
	return &Error{Status: 500, Type: "server_error", Message: e.detail}
}
