// Package connlimit caps a listener's connections, per client address and in total below the
// process's descriptor limit, with a reserve of slots kept for health checks: what a flood of
// clients may hold of the server. It sits below every front end that listens (the KServe v2
// HTTP server and gRPC service share it).
package connlimit

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Listener caps a listener's open connections: per client address (perIP) and in total.
// The last reserve connections under the total cap are marked reserved: they are answered
// only on the health routes, so a flood of slow clients never takes the slots the health
// checks need.
//
// A connection over a cap takes the slot of a stalled one when there is one (evict set:
// serve's HTTP listener): of the connections waiting on their clients — for the request
// line and headers, the body, or the next request (idle keep-alive) — one of the address
// holding the most connections is closed, the one of those waiting longest (of the same
// address when the address is at its cap), as nginx closes idle keep-alive connections
// when it runs out of them. The address that floods the server pays for it: a client
// elsewhere keeps the slot it gets. Every phase has its timeout
// (header, body, idle), but until it ends a flood of stalled connections held every slot
// and the server answered nobody; now a client that sends its request still gets a slot at
// once, and keeps it: once its request is read, the server works on it (Handler) and
// the connection is never taken. Without a waiting connection, one over a cap is closed at
// once. (No minimum wait: under a flood that re-dials as fast as it is cut off, any
// minimum is met by the flood's own connections first, and a newcomer would find none.)
type Listener struct {
	net.Listener
	total, perIP, reserve int
	evict                 bool
	mu                    sync.Mutex
	open                  int
	byIP                  map[string]int
	conns                 map[*Conn]struct{}
	refused, evicted      atomic.Int64
}

// New caps ln at total connections, perIP per client address, the last reserve of them
// kept for health checks (Reserved). evict: a connection over a cap takes the slot of one
// waiting on its client (an HTTP listener, whose server reports each connection's Phase);
// else it is closed at once.
func New(ln net.Listener, total, perIP, reserve int, evict bool) *Listener {
	return &Listener{Listener: ln, total: total, perIP: perIP, reserve: reserve, evict: evict, byIP: map[string]int{}, conns: map[*Conn]struct{}{}}
}

// Open is how many connections hold a slot now.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// Refused is how many connections were closed at accept for want of a slot; Evicted how many
// waiting connections gave their slot to a newcomer.
func (l *Listener) Refused() int64 { return l.refused.Load() }

// Evicted: see Refused.
func (l *Listener) Evicted() int64 { return l.evicted.Load() }

func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := c.RemoteAddr().String()
		if h, _, err := net.SplitHostPort(ip); err == nil {
			ip = h
		}
		now := time.Now()
		l.mu.Lock()
		overIP := l.byIP[ip] >= l.perIP
		var victim *Conn
		if l.open >= l.total || overIP {
			if overIP {
				victim = l.evictLocked(ip)
			} else {
				victim = l.evictLocked("")
			}
			if victim == nil {
				l.mu.Unlock()
				l.refused.Add(1)
				_ = c.Close()
				continue
			}
		}
		l.open++
		l.byIP[ip]++
		// A connection that took a stalled one's slot is not in the reserve: the slot was
		// freed as the stalled connection's timeout would have freed it.
		reserved := victim == nil && l.open > l.total-l.reserve
		lc := &Conn{Conn: c, l: l, ip: ip, reserved: reserved}
		lc.since.Store(now.UnixNano())
		l.conns[lc] = struct{}{}
		l.mu.Unlock()
		if victim != nil {
			l.evicted.Add(1)
			_ = victim.Conn.Close() // its server goroutine's read fails; its Close releases nothing more
		}
		return lc, nil
	}
}

// evictLocked picks a connection waiting on its client — of the address holding the most
// connections (of address ip, when not empty), the one waiting longest — and releases its
// slot; nil when there is none.
func (l *Listener) evictLocked(ip string) *Conn {
	if !l.evict {
		return nil
	}
	var victim *Conn
	var oldest int64
	most := 0
	for c := range l.conns {
		if (ip != "" && c.ip != ip) || Phase(c.phase.Load()) == Handler {
			continue
		}
		n, since := l.byIP[c.ip], c.since.Load()
		if victim == nil || n > most || (n == most && since < oldest) {
			victim, oldest, most = c, since, n
		}
	}
	if victim == nil || !victim.released.CompareAndSwap(false, true) {
		return nil // none, or one closing already (its release is about to free the slot)
	}
	l.releaseLocked(victim)
	return victim
}

func (l *Listener) release(c *Conn) {
	l.mu.Lock()
	l.releaseLocked(c)
	l.mu.Unlock()
}

func (l *Listener) releaseLocked(c *Conn) {
	l.open--
	if l.byIP[c.ip]--; l.byIP[c.ip] <= 0 {
		delete(l.byIP, c.ip)
	}
	delete(l.conns, c)
}

// Phase is what a connection under the caps waits for: its client (Waiting: the
// request line and headers, the next request, or the end of an answer; Body: the
// request's body) or the server (Handler).
type Phase int32

const (
	Waiting Phase = iota
	Body
	Handler
)

// Conn is a connection counted by a Listener until it closes.
type Conn struct {
	net.Conn
	l        *Listener
	ip       string
	reserved bool
	released atomic.Bool
	// phase and since (Unix ns) say what the connection waits for and since when.
	phase atomic.Int32
	since atomic.Int64
}

// SetPhase records that c entered phase p (nil c: a connection without caps).
func (c *Conn) SetPhase(p Phase) {
	if c == nil || Phase(c.phase.Load()) == p {
		return
	}
	// Ordered for evictLocked, which reads the phase first: a connection entering the
	// handler is never seen waiting with its old time, one leaving it never seen waiting
	// with its handler's start.
	if p == Handler {
		c.phase.Store(int32(p))
		c.since.Store(time.Now().UnixNano())
		return
	}
	c.since.Store(time.Now().UnixNano())
	c.phase.Store(int32(p))
}

func (c *Conn) Close() error {
	if c.released.CompareAndSwap(false, true) {
		c.l.release(c)
	}
	return c.Conn.Close()
}

// Reserved reports whether c, accepted by a Listener, holds one of the reserve slots kept for
// health checks: the protocol answers only its health checks on it.
func Reserved(c net.Conn) bool {
	lc, ok := c.(*Conn)
	return ok && lc.reserved
}

// Reserved reports whether the connection holds one of the reserve slots (nil: false).
func (c *Conn) Reserved() bool { return c != nil && c.reserved }

// Caps returns the connection caps: total and perIP as given (> 0), or defaults from the process's
// descriptor limit (three quarters of it in total, a quarter of that per client address, a
// 64th of it in reserve), so a flood is refused before accept fails with "too many open
// files".
func Caps(total, perIP int) (int, int, int) {
	if total <= 0 {
		total = max(fdLimit()*3/4, 64)
	}
	if perIP <= 0 {
		perIP = max(total/4, 16)
	}
	return total, perIP, min(max(total/64, 4), total/2)
}
