package sim

import (
	"context"
	"errors"
	"testing"
)

func TestParallel(t *testing.T) {
	boom := errors.New("boom")
	for _, par := range []int{0, 1, 3, 100} {
		out := make([]int, 20)
		calls := 0
		errs, err := Parallel(context.Background(), len(out), par, func(i int) error {
			out[i] = i * i
			if i == 7 {
				return boom
			}
			return nil
		}, func(_, finished int, _ error) { calls = max(calls, finished) })
		if err != nil {
			t.Fatal(err)
		}
		if calls != len(out) {
			t.Errorf("par %d: progress saw %d of %d", par, calls, len(out))
		}
		for i := range out {
			if out[i] != i*i || (errs[i] != nil) != (i == 7) {
				t.Errorf("par %d: index %d: value %d, error %v", par, i, out[i], errs[i])
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Parallel(ctx, 5, 2, func(int) error { return nil }, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
