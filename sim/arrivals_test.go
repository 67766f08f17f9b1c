package sim

import (
	"math"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
)

// gapStats draws n arrivals and returns the mean rate (per s) and the CV of the gaps.
func gapStats(t *testing.T, src Source, n int) (rate, cv float64) {
	t.Helper()
	var prev dataplane.Time
	var sum, sum2 float64
	var last dataplane.Time
	for i := 0; i < n; i++ {
		x := src.Next()
		if x < prev {
			t.Fatalf("arrival %d at %d before %d", i, x, prev)
		}
		g := float64(x - prev)
		sum += g
		sum2 += g * g
		prev = x
		last = x
	}
	mean := sum / float64(n)
	sd := math.Sqrt(sum2/float64(n) - mean*mean)
	return float64(n) / (float64(last) / 1e6), sd / mean
}

func TestArrivalRateAndCV(t *testing.T) {
	n := 400000
	if testing.Short() {
		n = 100000
	}
	cases := []struct {
		spec           string
		rate, cv       float64
		rateTol, cvTol float64
	}{
		{"poisson", 500, 1, 0.02, 0.03},
		{"bursty", 500, 3, 0.08, 0.25},
		{"bursty:1", 200, 1, 0.02, 0.03},
		{"bursty:2", 800, 2, 0.05, 0.12},
		// MMPP: mean rate λ; its gap CV is above 1 (bursts) but far below the Gamma's 3.
		{"mmpp", 50, 0, 0.05, 0},
	}
	for _, c := range cases {
		t.Run(c.spec, func(t *testing.T) {
			spec, err := ParseArrival(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			src, err := spec.New(c.rate, "m", 7)
			if err != nil {
				t.Fatal(err)
			}
			rate, cv := gapStats(t, src, n)
			if math.Abs(rate-c.rate)/c.rate > c.rateTol {
				t.Errorf("rate %.1f, want %.1f ± %.0f%%", rate, c.rate, 100*c.rateTol)
			}
			if c.cv > 0 && math.Abs(cv-c.cv)/c.cv > c.cvTol {
				t.Errorf("CV %.3f, want %.3f ± %.0f%%", cv, c.cv, 100*c.cvTol)
			}
			if c.spec == "mmpp" && !(cv > 1.05 && cv < 2) {
				t.Errorf("MMPP gap CV %.3f, want in (1.05, 2)", cv)
			}
		})
	}
}

func TestReplayFoldingScaler(t *testing.T) {
	// 1000 requests spread over 10 s (100/s native) in a bursty pattern.
	tr := &formats.Trace{}
	for i := 0; i < 1000; i++ {
		tr.Requests = append(tr.Requests, formats.TraceRequest{TimeUs: int64(i/10)*100000 + int64(i%10)*1000})
	}
	spec, err := TraceSpec("t.json", tr)
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []float64{50, 100, 400} {
		src, err := spec.New(target, "m", 1)
		if err != nil {
			t.Fatal(err)
		}
		// 100 s is a whole number of folding periods (n/rate = 20, 10, 2.5 s).
		n := 0
		for src.Next() < 100*dataplane.Second {
			n++
		}
		if want := int(target * 100); n != want {
			t.Errorf("folded trace: %d arrivals in 100 s, want %d", n, want)
		}
	}
	// Counts: 10 intervals of 1 s, all load in the first half.
	ct := &formats.Trace{Counts: &formats.RateSeries{Interval: formats.Duration(time.Second), Counts: []int64{100, 100, 100, 100, 100, 0, 0, 0, 0, 0}}}
	cspec, err := TraceSpec("c.json", ct)
	if err != nil {
		t.Fatal(err)
	}
	src, err := cspec.New(300, "m", 3)
	if err != nil {
		t.Fatal(err)
	}
	inQuiet := 0
	total := 0
	for {
		x := src.Next()
		if x >= 100*dataplane.Second {
			break
		}
		total++
		if (x/dataplane.Second)%10 >= 5 {
			inQuiet++
		}
	}
	if math.Abs(float64(total)-30000)/30000 > 0.03 || inQuiet != 0 {
		t.Errorf("counts: %d arrivals in 100 s (want ≈30000), %d in quiet intervals (want 0)", total, inQuiet)
	}
}

func TestTraceSpecRejectsBadTimestamps(t *testing.T) {
	for _, ts := range [][]int64{{0, 5, 3}, {-1, 2}} {
		tr := &formats.Trace{}
		for _, x := range ts {
			tr.Requests = append(tr.Requests, formats.TraceRequest{TimeUs: x})
		}
		if _, err := TraceSpec("bad.json", tr); err == nil {
			t.Errorf("timestamps %v accepted", ts)
		}
	}
}

func TestParseLoadRange(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		lo   float64
		hi   float64
		fail bool
	}{
		{in: "0.05:1.0:0.05", n: 20, lo: 0.05, hi: 1},
		{in: "0.5", n: 1, lo: 0.5, hi: 0.5},
		{in: "0.9,0.5,0.5", n: 2, lo: 0.5, hi: 0.9},
		{in: "1:0.5:0.1", fail: true},
		{in: "0.1:1:0", fail: true},
		{in: "", fail: true},
		{in: "0", fail: true},
		{in: "a:b:c", fail: true},
		{in: "0.1:1", fail: true},
		{in: "NaN", fail: true},
	}
	for _, c := range cases {
		got, err := ParseLoadRange(c.in)
		if c.fail {
			if err == nil {
				t.Errorf("ParseLoadRange(%q) = %v, want error", c.in, got)
			}
			continue
		}
		if err != nil || len(got) != c.n || got[0] != c.lo || got[len(got)-1] != c.hi {
			t.Errorf("ParseLoadRange(%q) = %v, %v; want %d points %g..%g", c.in, got, err, c.n, c.lo, c.hi)
		}
	}
}

func FuzzParseLoadRange(f *testing.F) {
	for _, s := range []string{"0.05:1.0:0.05", "0.5", "1,2,3", "1:0:1", "::", "1e308:1e308:1e-308"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		loads, err := ParseLoadRange(s)
		if err != nil {
			return
		}
		if len(loads) == 0 || len(loads) > 10000 {
			t.Fatalf("%q: %d loads", s, len(loads))
		}
		for i, v := range loads {
			if !(v > 0) || math.IsInf(v, 0) || (i > 0 && v <= loads[i-1]) {
				t.Fatalf("%q: bad load list %v", s, loads)
			}
		}
	})
}

func FuzzParseArrival(f *testing.F) {
	for _, s := range []string{"poisson", "bursty", "bursty:3", "mmpp", "bursty:-1", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		spec, err := ParseArrival(s)
		if err != nil {
			return
		}
		src, err := spec.New(100, "m", 1)
		if err != nil {
			t.Fatal(err)
		}
		var prev dataplane.Time
		for i := 0; i < 100; i++ {
			x := src.Next()
			if x < prev {
				t.Fatalf("%q: arrivals go back in time", s)
			}
			prev = x
		}
	})
}

func FuzzTraceFile(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"plan/v1","kind":"Trace","metadata":{"name":"x"},"requests":[{"t_us":0},{"t_us":5},{"t_us":5}]}`))
	f.Add([]byte(`{"apiVersion":"plan/v1","kind":"Trace","metadata":{"name":"x"},"requests":[{"t_us":9},{"t_us":5}]}`))
	f.Add([]byte(`{"apiVersion":"plan/v1","kind":"Trace","metadata":{"name":"x"},"counts":{"interval":"1s","counts":[3,0,2]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := DecodeTrace("fuzz.json", data)
		if err != nil {
			return
		}
		src, err := spec.New(1000, "m", 1)
		if err != nil {
			return
		}
		var prev dataplane.Time
		for i := 0; i < 50; i++ {
			x := src.Next()
			if x < prev {
				t.Fatal("arrivals go back in time")
			}
			prev = x
		}
	})
}
