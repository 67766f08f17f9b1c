// Package testmode decides, in one place, which test set runs: CI's (`make test`, the
// default) or the full one (`make test-full`, PLAN_TEST_FULL=1).
//
// A heavy end-to-end case — one that re-solves and re-simulates a whole system for tens of
// seconds — runs in the full set only, and every test that marks a case heavy keeps a fast
// representative of the same path in CI (another system, a shorter trace, fewer seeds), so CI
// still exercises every code path on a 2-core machine within its time budget while nothing is
// dropped: `make test-full` runs every case.
package testmode

import (
	"os"
	"testing"
)

// EnvFull is the environment variable that selects the full test set when set to "1".
const EnvFull = "PLAN_TEST_FULL"

// Full reports whether the full test set runs.
func Full() bool { return os.Getenv(EnvFull) == "1" }

// Heavy skips t unless the full test set runs, naming the case that stands for it in CI.
// Call it first in a heavy subtest or test.
func Heavy(t testing.TB, representative string) {
	t.Helper()
	if !Full() {
		t.Skipf("heavy case: runs under `make test-full` (%s=1); CI runs %s in its place", EnvFull, representative)
	}
}
