package qlm

import (
	"strconv"
	"sync"
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// TestRegistryConcurrentNew builds every QLM policy from many goroutines at once, each with its
// own seed: under -race this fails if New writes state its spec shares, and each policy must
// keep the seed it was built with.
func TestRegistryConcurrentNew(t *testing.T) {
	for _, sp := range Policies() {
		t.Run(sp.Name, func(t *testing.T) {
			var wg sync.WaitGroup
			got := make([]uint64, 8)
			errs := make([]error, 8)
			for i := range got {
				wg.Add(1)
				go func() {
					defer wg.Done()
					p, err := sp.New(dataplane.Config{Policy: sp.Name, Params: map[string]string{"seed": strconv.Itoa(i + 1)}})
					if err != nil {
						errs[i] = err
						return
					}
					got[i] = p.(*Policy).opt.seed
				}()
			}
			wg.Wait()
			for i, s := range got {
				if errs[i] != nil {
					t.Fatal(errs[i])
				}
				if s != uint64(i+1) {
					t.Errorf("policy %d: seed %d, want %d", i, s, i+1)
				}
			}
		})
	}
}
