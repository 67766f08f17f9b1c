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
	"slices"
	"testing"
	"time"
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

// Lateness measures how late short runtime timers fire on this machine right now: the 95th
// percentile of n one-millisecond timers' delays. Wall-clock expectations (a switch within
// seconds, requests within their SLO) only hold when the OS gives the process its CPU on
// time; on a machine loaded past its cores they measure the machine.
func Lateness() time.Duration {
	const n = 60
	late := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		<-time.After(time.Millisecond)
		late = append(late, time.Since(start)-time.Millisecond)
	}
	slices.Sort(late)
	return late[n*95/100]
}

// MaxLateness is the timer lateness past which SkipIfLate skips: two milliseconds at the
// 95th percentile, where the agreement runs stop comparing too.
const MaxLateness = 2 * time.Millisecond

// SkipIfLate skips t, naming what missed its time, when the machine is too loaded to keep
// time (Lateness > MaxLateness); it returns when the machine keeps time, so the caller then
// fails. Call it where a wall-clock expectation was missed. A loaded machine is not a
// missing dependency: PLAN_REQUIRE_ALL does not turn this skip into a failure.
func SkipIfLate(t testing.TB, what string) {
	t.Helper()
	if l := Lateness(); l > MaxLateness {
		t.Skipf("%s, on a machine too loaded to keep time: 1 ms timers fire %v late (p95; limit %v)", what, l, MaxLateness)
	}
}
