package formats

import (
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// notTimeOrRate lists the float fields that are neither a duration nor a rate, so the
// engine's clock does not bound them (sizes, FLOPs, weights, probabilities, solver figures).
// Every other float — every *_us, *_ms, *_s and *_rps field, and every rate — must refuse a
// value beyond the engine's integer-µs clock.
var notTimeOrRate = map[string]bool{
	"flops": true, "bytes": true, "params_billion": true, "avg_batch": true, "epsilon": true,
	"objective": true, "bound": true, "gap": true, "solve_ms": true, "used": true,
	"slo_scale": true, "weight": true, "probability": true, "cert": true, "mean": true, "std": true,
	"weights_gb": true, "act_gb": true, "out_kb": true, "p": true, "p_stop": true, "expected_accuracy": true,
	"thr": true, "share": true, "alpha": true, "slo_margin": true, "lower_bound": true, "upper_bound": true,
	"qps_histogram": true, "cv": true, "percentile": true, "accuracy_slo": true, "nic_derate": true,
	"choice": true, "params": true,
}

// leafName is the last field name of a path: "a.b[2].c_us[3]" → "c_us".
func leafName(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		path = path[i+1:]
	}
	if i := strings.IndexByte(path, '['); i >= 0 {
		path = path[:i]
	}
	return path
}

// TestEveryDurationAndRateIsBounded: a plan with stage_latency_us 1e308
// passed validation and overflowed the engine's µs clock. Every float that is a duration or a
// rate, in every good fixture, set to 1e308 one at a time, is reported at its own path.
func TestEveryDurationAndRateIsBounded(t *testing.T) {
	for _, f := range goodFixtures(t) {
		doc := loadGood(t, filepath.Base(f))
		var leaves []floatLeaf
		collectFloats(reflect.ValueOf(doc).Elem(), "", &leaves)
		n := 0
		for _, leaf := range leaves {
			if notTimeOrRate[leafName(leaf.path)] || strings.Contains(leaf.path, ".params") || strings.Contains(leaf.path, ".choice.") {
				continue
			}
			n++
			old := leaf.get()
			leaf.set(1e308)
			found := false
			for _, e := range Validate(doc, inTree) {
				found = found || e.Path == leaf.path
			}
			leaf.set(old)
			if !found {
				t.Errorf("%s: %s = 1e308 is not reported", filepath.Base(f), leaf.path)
			}
		}
		if errs := Validate(doc, inTree); len(errs) > 0 {
			t.Fatalf("%s: not restored: %v", f, errs)
		}
		t.Logf("%s: %d duration and rate fields", filepath.Base(f), n)
	}
}

// TestEveryDurationStringIsBounded: every Duration field (SLOs, intervals, latencies written
// as strings) refuses a value beyond MaxDuration, at its path.
func TestEveryDurationStringIsBounded(t *testing.T) {
	for _, f := range goodFixtures(t) {
		doc := loadGood(t, filepath.Base(f))
		var leaves []intLeaf
		collectInts(reflect.ValueOf(doc).Elem(), "", &leaves)
		for _, leaf := range leaves {
			if leaf.v.Type() != reflect.TypeFor[Duration]() && leafName(leaf.path) != "t_us" {
				continue
			}
			old := leaf.v.Int()
			big := int64(MaxDuration + time.Hour)
			if leaf.v.Type() != reflect.TypeFor[Duration]() {
				big = int64(MaxDurationUs) + 1
			}
			leaf.set(big)
			found := false
			for _, e := range Validate(doc, inTree) {
				found = found || e.Path == leaf.path
			}
			leaf.set(old)
			if !found {
				t.Errorf("%s: %s = %d is not reported", filepath.Base(f), leaf.path, big)
			}
		}
	}
}

func TestClockBounds(t *testing.T) {
	// The bounds leave room to add many durations in int64 µs without overflow.
	if MaxDurationUs*1e5 > math.MaxInt64 {
		t.Errorf("MaxDurationUs %g leaves too little headroom in int64 µs", MaxDurationUs)
	}
	if 1e6/MinRateRPS > MaxDurationUs*(1+1e-9) {
		t.Errorf("MinRateRPS %g: the interval between two arrivals exceeds MaxDuration", MinRateRPS)
	}
}

func TestValidateClockBounds(t *testing.T) {
	runBad(t, []badCase{
		{"count beyond the rate bound", "trace-counts.json", tr(func(tc *Trace) { tc.Counts.Counts[1] = 1 << 62 }),
			[]string{`trace-counts.json: counts.counts[1]: 4611686018427387904: must be <= 60000000000 in an interval of 1m0s (1e+09 requests/s, the engine clock's bound)`}},
		{"intervals beyond a year", "trace-counts.json", tr(func(tc *Trace) { tc.Counts.Interval = Duration(MaxDuration / 2) }),
			[]string{`trace-counts.json: counts.counts: 12: 12 intervals of 4380h0m0s span more than 8760h0m0s (the engine clock's bound)`}},
	})
}
