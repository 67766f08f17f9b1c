package qlm

import (
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// scaleBase is the number of instances of BenchmarkSimScale's 1× point.
const scaleBase = 8

// scaledDeployment is the QLM set-up of BenchmarkSimScale at k × scaleBase instances and k
// times the rate (MixedDeployment at load 1).
func scaledDeployment(tb testing.TB, k int) *dataplane.Deployment {
	tb.Helper()
	return mixedDeployment(tb, scaleBase*k, 1)
}

// mixedDeployment is MixedDeployment at n instances and load × its rate (the equivalence
// tests of stepset_test.go run it too).
func mixedDeployment(tb testing.TB, n int, load float64) *dataplane.Deployment {
	tb.Helper()
	d, err := MixedDeployment(n, load)
	if err != nil {
		tb.Fatal(err)
	}
	return d
}
