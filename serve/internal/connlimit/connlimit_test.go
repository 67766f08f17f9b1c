package connlimit

import (
	"net"
	"testing"
	"time"
)

// accepted runs l's accept loop and hands out what it accepts.
func accepted(t *testing.T, l *Listener) <-chan *Conn {
	t.Helper()
	out := make(chan *Conn, 64)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(out)
				return
			}
			out <- c.(*Conn)
		}
	}()
	t.Cleanup(func() { _ = l.Close() })
	return out
}

func dial(t *testing.T, l *Listener) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func listen(t *testing.T, total, perIP, reserve int, evict bool) *Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return New(ln, total, perIP, reserve, evict)
}

// TestCaps: per address and in total, a connection over a cap is closed at accept (no
// eviction), the last reserve slots are marked Reserved, and a closed connection frees its
// slot for the next.
func TestCaps(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		total, perIP, reserve int
		dials                 int
		open, refused         int
		reserved              int // how many accepted connections are Reserved
	}{
		{name: "per address", total: 10, perIP: 2, reserve: 4, dials: 3, open: 2, refused: 1},
		{name: "total", total: 3, perIP: 10, reserve: 1, dials: 5, open: 3, refused: 2, reserved: 1},
		{name: "reserve", total: 8, perIP: 8, reserve: 4, dials: 8, open: 8, reserved: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := listen(t, tc.total, tc.perIP, tc.reserve, false)
			got := accepted(t, l)
			for range tc.dials {
				dial(t, l)
			}
			waitFor(t, "every dial handled", func() bool { return l.Open()+int(l.Refused()) == tc.dials })
			if l.Open() != tc.open || int(l.Refused()) != tc.refused || l.Evicted() != 0 {
				t.Fatalf("open %d refused %d evicted %d; want %d, %d, 0", l.Open(), l.Refused(), l.Evicted(), tc.open, tc.refused)
			}
			var conns []*Conn
			reserved := 0
			for range tc.open {
				c := <-got
				conns = append(conns, c)
				if Reserved(c) != c.Reserved() {
					t.Errorf("Reserved(c) = %v, c.Reserved() = %v", Reserved(c), c.Reserved())
				}
				if c.Reserved() {
					reserved++
				}
			}
			if reserved != tc.reserved {
				t.Errorf("reserved %d; want %d", reserved, tc.reserved)
			}
			_ = conns[0].Close()
			_ = conns[0].Close() // a second Close frees nothing more
			if l.Open() != tc.open-1 {
				t.Errorf("open after a close: %d; want %d", l.Open(), tc.open-1)
			}
			dial(t, l)
			<-got
			if l.Open() != tc.open {
				t.Errorf("open after a new dial: %d; want %d", l.Open(), tc.open)
			}
		})
	}
}

// TestEvict: with evict, a connection over the cap takes the slot of the one waiting longest
// on its client; a connection the server works on (Handler) is never taken, and without a
// waiting one the newcomer is closed.
func TestEvict(t *testing.T) {
	l := listen(t, 2, 2, 1, true)
	got := accepted(t, l)
	dial(t, l)
	a := <-got
	time.Sleep(2 * time.Millisecond)
	dial(t, l)
	b := <-got
	b.SetPhase(Body)
	dial(t, l) // a waits longest: its slot goes
	c := <-got
	if l.Evicted() != 1 || l.Open() != 2 {
		t.Fatalf("evicted %d open %d; want 1, 2", l.Evicted(), l.Open())
	}
	if _, err := a.Conn.Read(make([]byte, 1)); err == nil {
		t.Error("the evicted connection is still open")
	}
	b.SetPhase(Handler)
	c.SetPhase(Handler)
	dial(t, l)
	waitFor(t, "the fourth dial refused", func() bool { return l.Refused() == 1 })
	if l.Evicted() != 1 || l.Open() != 2 {
		t.Errorf("evicted %d open %d; want 1, 2 (nothing waiting to take)", l.Evicted(), l.Open())
	}
	var none *Conn
	none.SetPhase(Body) // a connection without caps: no-op
	if none.Reserved() {
		t.Error("nil Conn reserved")
	}
}

// TestCapsDefaults: caps not given come from the descriptor limit, the reserve a 64th of the
// total (at least 4, at most half).
func TestCapsDefaults(t *testing.T) {
	for _, tc := range []struct{ total, perIP, wantT, wantP, wantR int }{
		{100, 10, 100, 10, 4},
		{6400, 0, 6400, 1600, 100},
		{6, 3, 6, 3, 3},
	} {
		if t2, p, r := Caps(tc.total, tc.perIP); t2 != tc.wantT || p != tc.wantP || r != tc.wantR {
			t.Errorf("Caps(%d, %d) = %d, %d, %d; want %d, %d, %d", tc.total, tc.perIP, t2, p, r, tc.wantT, tc.wantP, tc.wantR)
		}
	}
	if total, perIP, reserve := Caps(0, 0); total < 64 || perIP < 16 || reserve < 4 {
		t.Errorf("Caps(0, 0) = %d, %d, %d; want at least 64, 16, 4", total, perIP, reserve)
	}
}
