package serve

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/serve/internal/connlimit"
	"github.com/plan-dev/plan/serve/kserve"
)

// What a hostile client may hold: every route with a body reads
// it within one deadline (--body-timeout) and one per-route size limit, refused with 413 as
// soon as Content-Length says it is too large; connections are capped per client address and
// in total below the descriptor limit, with a reserve that only health and metrics may use;
// the state-changing endpoints answer only on a loopback listener (the data listener when it
// binds loopback and no --admin-addr is given, else the admin listener) or to a bearer token.

// BodyLimiter is implemented by a Frontend whose routes take bodies smaller than the server's
// default (Options.MaxBody): BodyLimits maps a route's pattern, as registered on the mux
// ("POST /v1/completions"), to its largest body in bytes. The server refuses a larger body
// with 413 before the handler runs.
type BodyLimiter interface {
	BodyLimits() map[string]int64
}

// ErrorWriter is implemented by a BodyLimiter front end whose API has an error shape of its
// own (the OpenAI API's error objects): the server's refusal of a body over
// the limit of one of its routes (413, before the handler runs) is written by WriteError
// instead of as {"error": "..."}.
type ErrorWriter interface {
	WriteError(w http.ResponseWriter, status int, msg string)
}

// ReadyChecker is implemented by a Frontend whose routes depend on something that can fail
// apart from the workers (the OpenAI API's durable batch queue): GET /v2/health/ready answers
// 503 with the reason while Ready returns an error (a dead queue must not
// leave the server reporting ready).
type ReadyChecker interface {
	Ready(ctx context.Context) error
}

// frontendsReady asks every ReadyChecker front end, each within readyCheckTimeout.
func (s *Server) frontendsReady(ctx context.Context) error {
	for _, f := range s.opts.Frontends {
		rc, ok := f.(ReadyChecker)
		if !ok {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, readyCheckTimeout)
		err := rc.Ready(cctx)
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

// readyCheckTimeout bounds one front end's readiness check: a probe must answer quickly.
const readyCheckTimeout = time.Second

// AdminRouter is implemented by a Frontend with state-changing routes of its own (a queue's
// purge, an engine's reconfiguration): AdminRoutes lists their patterns as registered on
// the mux, and the server answers them as it answers PUT /v1/plan (adminAllowed).
type AdminRouter interface {
	AdminRoutes() []string
}

// adminRoutes are the state-changing endpoints, which answer only an admin listener, a
// loopback address or a bearer token: the server's own and the front
// ends' (AdminRouter).
func (s *Server) adminRoutes() map[string]bool {
	m := map[string]bool{"PUT /v1/plan": true, "POST /v1/workers/state": true}
	for _, f := range s.opts.Frontends {
		if ar, ok := f.(AdminRouter); ok {
			for _, p := range ar.AdminRoutes() {
				m[p] = true
			}
		}
	}
	return m
}

// healthRoutes are answered on a reserve connection (a connection past the cap less the
// reserve): the probes that tell an orchestrator the server is alive under attack.
var healthRoutes = map[string]bool{"/v2/health/live": true, "/v2/health/ready": true, "/metrics": true, "/health": true}

// workerStateBytes bounds POST /v1/workers/state (a worker's name and a flag).
const workerStateBytes = 64 << 10

// bodyLimits builds the per-route limits: the server's own routes, then the front ends'.
func (s *Server) bodyLimits() map[string]int64 {
	lim := map[string]int64{"PUT /v1/plan": maxPlanBytes, "POST /v1/workers/state": workerStateBytes}
	for _, f := range s.opts.Frontends {
		if bl, ok := f.(BodyLimiter); ok {
			for p, n := range bl.BodyLimits() {
				lim[p] = n
			}
		}
	}
	return lim
}

// tooLargeOn is tooLarge, written by the ErrorWriter front end whose BodyLimits name pattern.
func (s *Server) tooLargeOn(w http.ResponseWriter, limit int64, pattern string) {
	for _, f := range s.opts.Frontends {
		ew, ok := f.(ErrorWriter)
		bl, ok2 := f.(BodyLimiter)
		if !ok || !ok2 {
			continue
		}
		if _, mine := bl.BodyLimits()[pattern]; mine {
			s.m.reject(http.StatusRequestEntityTooLarge, "body-too-large")
			w.Header().Set("Connection", "close")
			abandonBody(w)
			ew.WriteError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than this endpoint's limit of %d bytes", limit))
			return
		}
	}
	s.tooLarge(w, limit)
}

// isInfer reports a KServe infer request: its handler applies the same deadline and limit
// itself (readBody), on the hot path's cheaper route.
func isInfer(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v2/models/") && strings.HasSuffix(r.URL.Path, "/infer")
}

// serveGuarded serves a request other than infer: admin routes are checked, and a body gets
// the route's size limit (413 at once on a declared length over it) and the body deadline.
// Every route that declares a body — GET, an unknown path, an admin route refused — has it
// read under the deadline or not at all: a body the handler left unread is cut off when
// the handler returns (abandonBody), where net/http would drain it after the answer with
// no deadline, at the client's pace (a GET declaring 100 bytes and sending none held its
// connection, and its slot under --max-conns, forever).
func (s *Server) serveGuarded(w http.ResponseWriter, r *http.Request) {
	_, pattern := s.mux.Handler(r)
	declared := r.Body != nil && r.Body != http.NoBody
	if s.admin[pattern] && !s.adminAllowed(w, r) {
		if declared {
			abandonBody(w)
		}
		return
	}
	if !declared {
		s.mux.ServeHTTP(w, r)
		return
	}
	limit, ok := s.limits[pattern]
	if !ok {
		limit = s.opts.MaxBody
	}
	if r.ContentLength > limit {
		s.tooLargeOn(w, limit, pattern)
		return
	}
	rc := http.NewResponseController(w)
	gb := &guardedBody{ReadCloser: http.MaxBytesReader(w, r.Body, limit), rc: rc, limit: limit, r: r}
	if rc.SetReadDeadline(time.Now().Add(s.opts.BodyTimeout)) != nil {
		gb.lifted = true // not a connection with deadlines (a test's recorder)
	}
	r.Body = gb
	s.mux.ServeHTTP(&guardedWriter{ResponseWriter: w, body: gb}, r)
	if !gb.eof {
		abandonBody(w)
	}
}

// guardedBody is a request body read under the body deadline and the route's size limit. The
// deadline is lifted as soon as the body ends: left on the connection, it would end
// net/http's background read while a long handler (a reload, a stream) runs, and that
// cancels the request's context. A body that fails (the deadline, the limit) is abandoned
// instead: net/http closes a request's body after the handler by reading up to 256 KiB
// more of it, which, without a deadline, waits on the client for as long as it likes.
type guardedBody struct {
	io.ReadCloser
	rc     *http.ResponseController
	limit  int64
	lifted bool
	// ended: the body was read to its end or failed; eof: to its end. r is its request.
	ended, eof bool
	r          *http.Request
	// status is what the handler's error answer becomes: 413 (the limit) or 408 (the
	// deadline); 0 while the body reads fine.
	status int
}

func (b *guardedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		if err == io.EOF {
			b.eof = true
			b.lift()
		} else if !b.lifted {
			b.lifted = true
			_ = b.rc.SetReadDeadline(time.Now()) // abandoned (see guardedBody)
		}
		if !b.ended {
			b.ended = true
			if sc := stampOf(b.r); sc != nil {
				sc.lc.SetPhase(connlimit.Handler)
			}
		}
		var mb *http.MaxBytesError
		switch {
		case errors.As(err, &mb):
			b.status = http.StatusRequestEntityTooLarge
		case errors.Is(err, os.ErrDeadlineExceeded):
			b.status = http.StatusRequestTimeout
		}
	}
	return n, err
}

func (b *guardedBody) lift() {
	if !b.lifted {
		b.lifted = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
}

// guardedWriter turns a handler's error answer into 413 or 408 (with Connection: close) when
// its body tripped the limit or the deadline, whatever status the handler chose: every route
// answers an oversized or too slow body alike.
type guardedWriter struct {
	http.ResponseWriter
	body *guardedBody
}

func (w *guardedWriter) WriteHeader(code int) {
	if code >= 400 && w.body.status != 0 {
		code = w.body.status
		w.Header().Set("Connection", "close")
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (deadlines, flushes).
func (w *guardedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush serves handlers that stream through http.Flusher.
func (w *guardedWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

// adminAllowed answers 401 or 403 and reports false unless r may change the server's state:
// it came in on a loopback listener that takes admin requests, or carries the admin token.
func (s *Server) adminAllowed(w http.ResponseWriter, r *http.Request) bool {
	if tok := s.opts.AdminToken; tok != "" {
		got, ok := bearerToken(r.Header.Get("Authorization"))
		if ok && subtle.ConstantTimeCompare([]byte(got), []byte(tok)) == 1 {
			return true
		}
	}
	if s.adminConn(r) {
		return true
	}
	s.m.reject(http.StatusForbidden, "admin")
	if s.opts.AdminToken != "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="plan admin"`)
		writeJSON(w, http.StatusUnauthorized, kserve.ErrorResponse{Error: fmt.Sprintf("%s %s changes the server's state: send Authorization: Bearer <--admin-token>", r.Method, formats.EchoName(r.URL.Path))})
		return false
	}
	writeJSON(w, http.StatusForbidden, kserve.ErrorResponse{Error: fmt.Sprintf("%s %s changes the server's state: it is answered on the admin listener (--admin-addr, loopback) or with --admin-token", r.Method, formats.EchoName(r.URL.Path))})
	return false
}

// bearerToken returns the token of an Authorization header of the Bearer scheme. The scheme
// is matched case-insensitively (RFC 9110 §11.1: "bearer" and "BEARER" are Bearer) and may
// be followed by more than one space (RFC 9110 §11.4's 1*SP); the token itself is exact.
func bearerToken(h string) (string, bool) {
	scheme, rest, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok := strings.TrimLeft(rest, " ")
	return tok, tok != ""
}

// adminConn reports whether r came in on a listener that takes admin requests: the admin
// listener (ServeAdmin), or, while there is none, a data listener bound to loopback.
func (s *Server) adminConn(r *http.Request) bool {
	if sc := stampOf(r); sc != nil && sc.admin {
		return true
	}
	if s.adminSeparate.Load() {
		return false
	}
	la, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return la != nil && IsLoopback(la.String())
}

// IsLoopback reports whether addr (host:port or host) names only loopback interfaces: a
// loopback IP or "localhost". An empty host (":8080") binds every interface.
func IsLoopback(addr string) bool {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// LimitListener caps ln's open connections as Serve caps its own (Options.MaxConns,
// MaxConnsPerIP, the same reserve): for the listeners of other protocols on the same server
// (KServe gRPC). The protocol enforces the reserve itself: ReservedConn tells which accepted
// connections hold a reserve slot, and it answers only its health checks on them.
func (s *Server) LimitListener(ln net.Listener) net.Listener {
	total, perIP, reserve := connlimit.Caps(s.opts.MaxConns, s.opts.MaxConnsPerIP)
	return connlimit.New(ln, total, perIP, reserve, false)
}

// ReservedConn reports whether c, accepted by a LimitListener, holds one of the reserve slots
// kept for health checks.
func ReservedConn(c net.Conn) bool { return connlimit.Reserved(c) }
