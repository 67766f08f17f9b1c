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
	s.arrivals.Add(1)
	name := r.PathValue("model")
	spec, g, ok := s.model(name)
	if !ok {
		s.unknownModel(w, name, g)
		return
	}
	if s.closing.Load() {
		s.refuse(w, r, name, "", string(dataplane.DropShutdown), "the server is shutting down", 0, true, true)
		return
	}
	if r.ContentLength > s.opts.MaxBody {
		s.tooLarge(w, s.opts.MaxBody)
		return
	}
	s.observeHTTP(at, name, r)
	app := g.apps[name]
	dr := &g.doors[app]
	if until := dataplane.Time(dr.closedUntil.Load()); at < until {
		// The policy (or the driver's estimate) says a request arriving now cannot finish
		// by its deadline: refuse it before reading and decoding its body.
		reason := "overload"
		if p := dr.reason.Load(); p != nil {
			reason = *p
		}
		s.refuse(w, r, name, "", reason, fmt.Sprintf("refused at the door (%s): a request arriving now cannot finish within its SLO", reason), until-at, true, false)
		return
	}
	// A malformed trace header is refused before the body is read: the connection closes
	// rather than draining a body no answer will use, as the door's refusals do.
	trace, err := kserve.ParseTraceIndex(r.Header.Get(kserve.TraceIndexHeader))
	var inTok, outTok int32
	if err == nil {
		inTok, outTok, err = kserve.ParseTraceTokens(r.Header.Get(kserve.TraceTokensHeader))
	}
	if err != nil {
		s.m.reject(400, "bad-request")
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
			s.m.reject(http.StatusRequestTimeout, "body-timeout")
			w.Header().Set("Connection", "close")
			writeJSON(w, http.StatusRequestTimeout, kserve.ErrorResponse{Error: fmt.Sprintf("reading the request body took longer than %s", s.opts.BodyTimeout)})
		default:
			s.m.reject(400, "read")
			w.Header().Set("Connection", "close")
			writeJSON(w, 400, kserve.ErrorResponse{Error: "reading the request body: " + err.Error()})
		}
		return
	}
	bodyRead(r)
	req, err := kserve.DecodeInfer(body, spec.in)
	if err != nil {
		s.m.reject(400, "bad-request")
		writeJSON(w, 400, kserve.ErrorResponse{Error: err.Error()})
		return
	}
	if age := s.clk.Now() - at; age >= dataplane.Time(spec.sloUs) {
		// Reading and decoding took the whole SLO (a slow client, a starved machine): the
		// request cannot finish in time, and the driver need not spend an event on it.
		s.refuseTimed(w, r, name, req.ID, string(dataplane.DropDeadline), fmt.Sprintf("refused at the door (deadline): the request is %d µs old, its SLO %d µs", age, spec.sloUs), 0, false, false,
			kserve.Timing{LatencyUs: int64(age), SLOUs: spec.sloUs, IntakeUs: int64(age)})
		return
	}
	if s.inflight.Add(1) > int64(s.opts.MaxInFlight) {
		s.inflight.Add(-1)
		s.refuse(w, r, name, req.ID, "overload", fmt.Sprintf("the server holds %d requests (--max-inflight)", s.opts.MaxInFlight), 0, false, false)
		return
	}
	defer s.inflight.Add(-1)
	c := newCall(name, spec.series, req.ID, at, &req.Inputs[0])
	c.attrs = dataplane.Attrs{Trace: trace, InTokens: inTok, OutTokens: outTok}
	if !s.d.submit(c) {
		s.refuse(w, r, name, req.ID, string(dataplane.DropShutdown), "the server is shutting down", 0, false, true)
		return
	}
	select {
	case <-c.done:
	case <-r.Context().Done():
		// The client left: the driver withdraws the request from the engine, and its answer
		// lands in the call and its buffered channel.
		s.d.cancel(c)
		return
	}
	res := &c.res
	// A client that does not read its answer is cut off after WriteTimeout. The deadline
	// stays on the connection, so it is lifted once the answer is out: the connection's next
	// request must not inherit it.
	rc := http.NewResponseController(w)
	if rc.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout)) == nil {
		s.writeResult(w, name, spec, c, res)
		_ = rc.Flush()
		_ = rc.SetWriteDeadline(time.Time{})
	} else {
		s.writeResult(w, name, spec, c, res)
		_ = rc.Flush()
	}
	if res.status == 200 {
		s.d.delivery.observe(int64(s.d.clk.Now() - res.finished))
	}
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

// refuse answers a request the server does not take: 503 with the reason at stage intake,
// counted as a drop, with Retry-After (retry: when the door reopens; 0 = one second).
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, model, id, reason, msg string, retry dataplane.Time, unread, closeConn bool) {
	s.refuseTimed(w, r, model, id, reason, msg, retry, unread, closeConn, kserve.Timing{})
}

// refuseTimed is refuse with the request's timing so far.
func (s *Server) refuseTimed(w http.ResponseWriter, r *http.Request, model, id, reason, msg string, retry dataplane.Time, unread, closeConn bool, t kserve.Timing) {
	s.m.reject(http.StatusServiceUnavailable, reason)
	s.m.drop(model, "intake", reason)
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
	writeDropAfter(w, &kserve.DropResponse{Error: msg, Model: model, ID: id, Reason: reason, Stage: "intake", Timing: t}, retry)
}

// abandonBody ends the reading of a request body the server refuses unread. Without it,
// net/http drains up to 256 KiB of an unread body before it closes the connection, at the
// client's pace: a slow client refused this way would keep its connection (and its slot
// under --max-conns) as long as it likes.
func abandonBody(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}

func (s *Server) tooLarge(w http.ResponseWriter, limit int64) {
	s.m.reject(http.StatusRequestEntityTooLarge, "body-too-large")
	w.Header().Set("Connection", "close")
	abandonBody(w)
	what := fmt.Sprintf("this endpoint's limit of %d bytes", limit)
	if limit == s.opts.MaxBody {
		what = fmt.Sprintf("--max-body %d bytes", limit)
	}
	writeJSON(w, http.StatusRequestEntityTooLarge, kserve.ErrorResponse{Error: "request body larger than " + what})
}

func (s *Server) writeResult(w http.ResponseWriter, model string, spec *modelSpec, c *call, res *result) {
	switch res.status {
	case 200:
		out := kserve.TensorJSON{Name: spec.out.Name, Datatype: spec.out.Datatype}
		if res.payload != nil {
			out = res.payload.Tensor
			if out.Name == "" || out.Name == spec.in.Name {
				out.Name = spec.out.Name
			}
		}
		if params := res.parameters(); params != nil || out.Parameters != nil {
			writeJSON(w, 200, &kserve.InferResponse{ModelName: model, ID: c.id, Outputs: []kserve.TensorJSON{out}, Parameters: params, Outcome: res.outcome, Timing: res.timing})
			return
		}
		outs := [1]kserve.TensorJSON{out}
		writeInfer(w, &kserve.InferResponse{ModelName: model, ID: c.id, Outputs: outs[:], Outcome: res.outcome, Timing: res.timing})
	case 503:
		msg := fmt.Sprintf("request dropped at %s: %s", res.stage, res.reason)
		writeDrop(w, &kserve.DropResponse{Error: msg, Model: model, ID: c.id, Reason: res.reason, Stage: res.stage, EstimateUs: res.estimate, Timing: res.timing})
	default:
		msg := res.err
		if res.stage != "" {
			msg = fmt.Sprintf("stage %s: %s", res.stage, res.err)
		}
		writeJSON(w, res.status, kserve.ErrorResponse{Error: msg})
	}
}
