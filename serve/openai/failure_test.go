package openai

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/plan-dev/plan/serve"
)

// TestFailureMessage: a drop's message names its reason and stage, then what the engine said
// when it said anything; other failures are what the engine said.
func TestFailureMessage(t *testing.T) {
	for _, tc := range []struct {
		a    serve.Answer
		want string
	}{
		{serve.Answer{Status: 503, Reason: "deadline", Stage: "instances"}, "dropped (deadline at instances)"},
		{serve.Answer{Status: 503, Reason: "overload", Stage: "intake", Err: "the server holds 8 requests"}, "dropped (overload at intake): the server holds 8 requests"},
		{serve.Answer{Status: 400, Err: "deadline: -1s: must not be negative"}, "deadline: -1s: must not be negative"},
		{serve.Answer{Status: 500, Err: "boom"}, "boom"},
	} {
		f := newFailure(&tc.a)
		if got := f.Error(); got != tc.want {
			t.Errorf("%+v: Error() %q, want %q", tc.a, got, tc.want)
		}
		if e := f.openAI(); e.Message != tc.want {
			t.Errorf("%+v: message %q, want %q", tc.a, e.Message, tc.want)
		}
	}
}

// TestAPIError: the failure is found through wrapping (errors.As), and any other error is
// the server's own 503 that closes the connection.
func TestAPIError(t *testing.T) {
	drop := newFailure(&serve.Answer{Status: 503, Reason: "shutdown", Stage: "intake", Err: "the server is shutting down"})
	e := apiError(fmt.Errorf("choice 2: %w", drop))
	if e.Status != 503 || e.Code != "shutdown" || !e.Close || e.Message != "dropped (shutdown at intake): the server is shutting down" {
		t.Errorf("wrapped shutdown → %+v", e)
	}
	if !drop.shutdown() || newFailure(&serve.Answer{Status: 503, Reason: "overload", Stage: "intake"}).shutdown() {
		t.Error("shutdown() does not tell a shutdown from an overload")
	}
	e = apiError(newFailure(&serve.Answer{Status: 404, Err: `model "x" not found`}))
	if e.Status != 404 || e.Param != "model" || e.Code != "model_not_found" || e.Close {
		t.Errorf("404 → %+v", e)
	}
	e = apiError(context.Canceled)
	if e.Status != 503 || e.Type != "server_error" || !e.Close || e.Message != context.Canceled.Error() {
		t.Errorf("context.Canceled → %+v", e)
	}
	var f *failure
	if errors.As(context.Canceled, &f) {
		t.Error("a context error taken for the engine's failure")
	}
}
