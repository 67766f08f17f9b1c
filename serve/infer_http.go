package serve

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/serve/kserve"
)

func (s *Server) handleInfer(w http.ResponseWriter, r *http.Request) {
	// The true arrival: when the request's first bytes were read off the socket (Serve
	// stamps its connections), else now — its headers are read, its body is not yet. The
	// deadline counts from here.
	at := s.arrival(r)
	name := r.PathValue("model")
	// The arrival observer sees the trace header's token counts (its errors are answered
	// below, once the door has let the request in).
	inTok, outTok, tokErr := kserve.ParseTraceTokens(r.Header.Get(kserve.TraceTokensHeader))
	t, refused := s.Arrive(Request{Model: name, Arrived: s.clk.At(at), Size: r.ContentLength, Attrs: dataplane.Attrs{InTokens: inTok, OutTokens: outTok}})
	if refused != nil {
		switch refused.Status {
		case http.StatusNotFound:
			writeUnknownModel(w, name, s.Models())
		case http.StatusRequestEntityTooLarge:
			s.writeTooLarge(w, s.opts.MaxBody)
		default:
			// Refused before its body was read; a shutdown also closes the connection.
			s.writeRefusal(w, r, name, "", refused, true, refused.Reason == string(dataplane.DropShutdown))
		}
		return
	}
	// A malformed trace header is refused before the body is read: the connection closes
	// rather than draining a body no answer will use, as the door's refusals do.
	trace, err := kserve.ParseTraceIndex(r.Header.Get(kserve.TraceIndexHeader))
	if err == nil {
		err = tokErr
	}
	if err != nil {
		s.Reject(400, "bad-request")
		w.Header().Set("Connection", "close")
		writeJSON(w, 400, kserve.ErrorResponse{Error: err.Error()})
		return
	}
	body, err := s.readBody(w, r)
	if err != nil {
		var mb *http.MaxBytesError
		switch {
		case errors.As(err, &mb):
			s.tooLarge(w, mb.Limit)
		case errors.Is(err, os.ErrDeadlineExceeded):
			s.Reject(http.StatusRequestTimeout, "body-timeout")
			w.Header().Set("Connection", "close")
			writeJSON(w, http.StatusRequestTimeout, kserve.ErrorResponse{Error: fmt.Sprintf("reading the request body took longer than %s", s.opts.BodyTimeout)})
		default:
			s.Reject(400, "read")
			w.Header().Set("Connection", "close")
			writeJSON(w, 400, kserve.ErrorResponse{Error: "reading the request body: " + err.Error()})
		}
		return
	}
	bodyRead(r)
	var req kserve.InferRequest
	if h := r.Header.Values(kserve.BinaryHeader); len(h) > 0 {
		// Triton's binary tensor data extension: JSON, then the inputs' raw bytes.
		if len(h) > 1 {
			err = fmt.Errorf("%s: given %d times: give it once", kserve.BinaryHeader, len(h))
		} else {
			req, err = kserve.DecodeInferBinary(body, h[0], t.Input())
		}
	} else {
		req, err = kserve.DecodeInfer(body, t.Input())
	}
	if err == nil {
		// A requested output the model does not have is refused, as the gRPC front end
		// refuses it, never silently answered with the one it does have.
		err = kserve.CheckOutputs(name, req.Outputs, t.Output())
	}
	if err != nil {
		s.Reject(400, "bad-request")
		writeJSON(w, 400, kserve.ErrorResponse{Error: err.Error()})
		return
	}
	a, err := t.Submit(r.Context(), Request{ID: req.ID, Input: &req.Inputs[0], Attrs: dataplane.Attrs{Trace: trace, InTokens: inTok, OutTokens: outTok}, RefuseStale: true})
	if err != nil {
		// The client left: the driver withdrew the request, and no one reads an answer.
		return
	}
	if a.Refused() {
		// Refused by the submit (too old, --max-inflight, a shutdown): its body is read.
		s.writeRefusal(w, r, name, req.ID, a, false, a.Reason == string(dataplane.DropShutdown))
		return
	}
	// A client that does not read its answer is cut off after WriteTimeout. The deadline
	// stays on the connection, so it is lifted once the answer is out: the connection's next
	// request must not inherit it.
	rc := http.NewResponseController(w)
	if rc.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout)) == nil {
		writeAnswer(w, name, req.ID, a)
		_ = rc.Flush()
		_ = rc.SetWriteDeadline(time.Time{})
	} else {
		writeAnswer(w, name, req.ID, a)
		_ = rc.Flush()
	}
	s.Delivered(a)
}

// readBody reads the body within BodyTimeout and MaxBody. The read deadline is lifted
// afterwards: the connection's next request has its own.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Now().Add(s.opts.BodyTimeout)); err == nil {
		defer func() { _ = rc.SetReadDeadline(time.Time{}) }()
	}
	if n := r.ContentLength; n >= 0 {
		// Known length (checked against MaxBody, and net/http's body reader stops at it):
		// one allocation, one read, no limit reader.
		buf := make([]byte, n)
		if _, err := io.ReadFull(r.Body, buf); err != nil {
			return nil, err
		}
		return buf, nil
	}
	return io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBody))
}

// writeRefusal answers a request the driver refused at intake (a): 503 with the reason, the
// request's timing so far and Retry-After (when the door reopens; 0 = one second). unread:
// its body is not read yet; closeConn: close the connection after the answer.
func (s *Server) writeRefusal(w http.ResponseWriter, r *http.Request, model, id string, a *Answer, unread, closeConn bool) {
	if unread && !closeConn {
		// Refused before its body was read: net/http reads (discards) a small unread body
		// to keep the connection, which a client that sent it already makes instant. Bound
		// that read for one that did not; close the connection instead of reading a large
		// or unknown-length body.
		if n := r.ContentLength; n < 0 || n > 64<<10 {
			closeConn = true
		} else {
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			// Discard it here rather than after the handler, so that its reads do not stamp
			// the connection's next request.
			if _, err := io.Copy(io.Discard, r.Body); err != nil {
				closeConn = true
			} else {
				_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
			}
			bodyRead(r)
		}
	}
	if closeConn {
		w.Header().Set("Connection", "close")
	}
	writeDropAfter(w, &kserve.DropResponse{Error: a.Err, Model: model, ID: id, Reason: a.Reason, Stage: "intake", Timing: a.Timing}, dataplane.Time(a.RetryUs))
}

// abandonBody ends the reading of a request body the server refuses unread. Without it,
// net/http drains up to 256 KiB of an unread body before it closes the connection, at the
// client's pace: a slow client refused this way would keep its connection (and its slot
// under --max-conns) as long as it likes.
func abandonBody(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}

// tooLarge counts and answers a body larger than limit (413).
func (s *Server) tooLarge(w http.ResponseWriter, limit int64) {
	s.Reject(http.StatusRequestEntityTooLarge, "body-too-large")
	s.writeTooLarge(w, limit)
}

// writeTooLarge answers a body larger than limit (413) and closes the connection.
func (s *Server) writeTooLarge(w http.ResponseWriter, limit int64) {
	w.Header().Set("Connection", "close")
	abandonBody(w)
	what := fmt.Sprintf("this endpoint's limit of %d bytes", limit)
	if limit == s.opts.MaxBody {
		what = fmt.Sprintf("--max-body %d bytes", limit)
	}
	writeJSON(w, http.StatusRequestEntityTooLarge, kserve.ErrorResponse{Error: "request body larger than " + what})
}

// writeAnswer writes an answer from the engine: 200 with the output tensor (and the response
// parameters of a model that reported its certainty), 503 dropped, or the error.
func writeAnswer(w http.ResponseWriter, model, id string, a *Answer) {
	switch a.Status {
	case 200:
		if params := a.Parameters(); params != nil || a.Output.Parameters != nil {
			writeJSON(w, 200, &kserve.InferResponse{ModelName: model, ID: id, Outputs: []kserve.TensorJSON{a.Output}, Parameters: params, Outcome: a.Outcome, Timing: a.Timing})
			return
		}
		outs := [1]kserve.TensorJSON{a.Output}
		writeInfer(w, &kserve.InferResponse{ModelName: model, ID: id, Outputs: outs[:], Outcome: a.Outcome, Timing: a.Timing})
	case 503:
		writeDrop(w, &kserve.DropResponse{Error: a.Err, Model: model, ID: id, Reason: a.Reason, Stage: a.Stage, EstimateUs: a.EstimateUs, Timing: a.Timing})
	default:
		writeJSON(w, a.Status, kserve.ErrorResponse{Error: a.Err})
	}
}
