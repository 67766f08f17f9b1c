package serve

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/serve/internal/connlimit"
	"github.com/plan-dev/plan/serve/worker"
)

// A request's true arrival is when its first bytes were read off the socket, not when its
// handler started: under overload the accepted request's headers wait to be parsed and its
// goroutine waits to run, and that time counts against its deadline (issue: reject early
// what cannot finish in time). stampListener wraps every accepted connection so that its
// reads record the instant the next request's first bytes came in.

// stampConn is a connection that records when the bytes of its next request arrived.
type stampConn struct {
	net.Conn
	clk worker.Clock
	// first is 1 + the server time of the first read that returned bytes since the last
	// take (0: none yet).
	first atomic.Int64
	// cur is the stamp of the request being served (ServeHTTP takes it; HTTP/1.1 serves one
	// request of a connection at a time, on one goroutine).
	cur dataplane.Time
	// admin: the connection came in on the admin listener; reserved: it holds one of the
	// connection slots kept for health checks (connlimit.Reserved).
	admin, reserved bool
	// lc is the connection's slot under --max-conns (nil for a listener without caps): the
	// server tells it which phase the connection is in (connlimit.Phase).
	lc *connlimit.Conn
	// bodyDone: the request being served had its body read to the end (readBody).
	bodyDone bool
}

func (c *stampConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.first.Load() == 0 {
		c.first.CompareAndSwap(0, int64(c.clk.Now())+1)
	}
	return n, err
}

// take returns the recorded stamp (or -1 for none) and clears it.
func (c *stampConn) take() dataplane.Time { return dataplane.Time(c.first.Swap(0) - 1) }

type stampListener struct {
	net.Listener
	clk   worker.Clock
	admin bool
}

func (l stampListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	sc := &stampConn{Conn: c, clk: l.clk, admin: l.admin}
	if lc, ok := c.(*connlimit.Conn); ok {
		sc.reserved, sc.lc = lc.Reserved(), lc
	}
	return sc, nil
}

type connKey struct{}

// connContext gives each connection's requests access to its stamps (http.Server.ConnContext:
// one context per connection, not per request).
func connContext(ctx context.Context, c net.Conn) context.Context {
	if sc, ok := c.(*stampConn); ok {
		return context.WithValue(ctx, connKey{}, sc)
	}
	return ctx
}

func stampOf(r *http.Request) *stampConn {
	sc, _ := r.Context().Value(connKey{}).(*stampConn)
	return sc
}

// arrival is the request's true arrival on the server's clock: its socket stamp when there is
// a plausible one (not in the future, not older than the header timeout allows), else now.
func (s *Server) arrival(r *http.Request) dataplane.Time {
	now := s.clk.Now()
	if sc := stampOf(r); sc != nil {
		if t := sc.cur; t >= 0 && t <= now && now-t <= dataplane.Time(s.opts.HeaderTimeout.Microseconds()) {
			return t
		}
	}
	return now
}

// bodyRead marks the request's body as consumed: reads from now on belong to the next request.
//
// It also records that the body was read to its end, so the connection leaves the body
// phase (its slot is no longer one a stalled client holds) and the server need not cut
// the body short after the handler (ServeHTTP).
func bodyRead(r *http.Request) {
	if sc := stampOf(r); sc != nil {
		sc.first.Store(0)
		sc.bodyDone = true
		sc.lc.SetPhase(connlimit.Handler)
	}
}
