package waketimer

import (
	"runtime"
	"sort"
	"testing"
	"time"
)

func TestTimer(t *testing.T) {
	for name, mk := range map[string]func() Timer{"default": New, "go": func() Timer { return newGoTimer() }} {
		t.Run(name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			w := mk()
			var late []time.Duration
			for i := 0; i < 50; i++ {
				start := time.Now()
				d := time.Duration(200+37*i) * time.Microsecond
				w.Reset(d)
				<-w.C()
				got := time.Since(start)
				if got < d {
					t.Fatalf("fired after %v, armed for %v", got, d)
				}
				late = append(late, got-d)
			}
			// Re-arming replaces the pending expiry: a far one is not delivered.
			w.Reset(time.Hour)
			w.Reset(time.Millisecond)
			select {
			case <-w.C():
			case <-time.After(5 * time.Second):
				t.Fatal("re-armed timer did not fire")
			}
			w.Close()
			sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
			t.Logf("lateness p50 %v p90 %v max %v", late[len(late)/2], late[len(late)*9/10], late[len(late)-1])
			for i := 0; i < 100 && runtime.NumGoroutine() > before; i++ {
				time.Sleep(10 * time.Millisecond)
			}
			if n := runtime.NumGoroutine(); n > before {
				t.Errorf("goroutines: %d before, %d after Close", before, n)
			}
		})
	}
}
