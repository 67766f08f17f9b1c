package sim

import (
	"context"
	"runtime"
	"sync"
)

// Parallel runs fn(i) for i in [0, n) on up to par goroutines (par <= 0: all cores) and
// returns each call's error by index, so callers assemble results in a fixed order and stay
// deterministic however the work interleaves. done, when non-nil, is called after each call
// under a lock with the number finished so far and the call's error (for progress bars). A cancelled ctx stops
// handing out work; its error is returned after the running calls finish.
func Parallel(ctx context.Context, n, par int, fn func(i int) error, done func(i, finished int, err error)) ([]error, error) {
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	par = max(1, min(par, n))
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	finished := 0
	for w := 0; w < par; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = fn(i)
				if done != nil {
					mu.Lock()
					finished++
					done(i, finished, errs[i])
					mu.Unlock()
				}
			}
		}()
	}
feed:
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return errs, ctx.Err()
}
