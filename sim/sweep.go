package sim

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"sort"
	"strconv"
	"strings"

	rt "github.com/plan-dev/plan/dataplane"
)

// ReportKind is the kind written into simulation (and `plan load`) reports.
const ReportKind = "SimulationReport"

// Report is the deterministic, JSON-serializable result of a load sweep. It holds no wall-clock
// values, so the same inputs and seed give byte-identical files. `plan load` reuses it with
// one point per measured rate.
type Report struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Plan       string `json:"plan"`
	Strategy   string `json:"strategy,omitempty"`
	Policy     string `json:"policy"`
	// Params are the policy parameters in effect (sorted keys, so stable).
	Params     map[string]string `json:"params,omitempty"`
	Trace      string            `json:"trace"`
	Seed       uint64            `json:"seed"`
	DurationUs int64             `json:"duration_us"`
	Jitter     float64           `json:"jitter,omitempty"`
	// BaseRPS is each application's rate at load factor 1.0.
	BaseRPS []AppRate `json:"base_rps"`
	Points  []Point   `json:"points"`
	// MaxLoad99 is the highest load factor with ≥ 99% attainment whose next lower step in the
	// sweep also passes (one lucky run above failing steps does not count; 0 = none).
	MaxLoad99 float64 `json:"max_load_99"`
}

// AppRate names an application's base rate.
type AppRate struct {
	App string  `json:"app"`
	RPS float64 `json:"rps"`
}

// Point is one load factor's result.
type Point struct {
	Load float64 `json:"load"`
	Metrics
}

// SweepConfig describes a load sweep.
type SweepConfig struct {
	Dep *rt.Deployment
	// Policies is the registry the policy comes from; Policy picks it (a fresh instance per
	// load point; Policy.Policy must name one that serves Dep).
	Policies *rt.Registry
	Policy   rt.Config
	Arrival  ArrivalSpec
	// BaseRPS overrides the per-app rate at load 1.0 (default: each app's planned RateRPS).
	BaseRPS  []float64
	Loads    []float64
	Duration rt.Time
	Seed     uint64
	Jitter   float64
	// Parallel bounds concurrent load points (≤ 0: GOMAXPROCS).
	Parallel int
	// Progress, when set, is called after each finished point (from the calling goroutine's
	// perspective it may run concurrently; it must be safe for that).
	Progress func(done, total int, p *Point)
	// Labels for the report.
	PlanName, Strategy string
	// Failures are injected at every load point (Options.Failures).
	Failures []Failure
}

// PointSeed derives the seed of one application at one load factor from the sweep seed, so a
// point's result does not depend on which other points run or in which order.
func PointSeed(seed uint64, load float64, app int) uint64 {
	h := fnv.New64a()
	var b [24]byte
	binary.LittleEndian.PutUint64(b[0:], seed)
	binary.LittleEndian.PutUint64(b[8:], math.Float64bits(load))
	binary.LittleEndian.PutUint64(b[16:], uint64(app))
	h.Write(b[:])
	return h.Sum64()
}

// RunPoint simulates one load factor.
func RunPoint(cfg *SweepConfig, load float64) (*Point, error) {
	s, err := newPointSimCompact(cfg, load, true)
	if err != nil {
		return nil, err
	}
	m, err := s.Run()
	if err != nil {
		return nil, err
	}
	var total float64
	for a := range m.Apps {
		rate := cfg.Dep.Apps[a].RateRPS
		if a < len(cfg.BaseRPS) {
			rate = cfg.BaseRPS[a]
		}
		m.Apps[a].OfferedRPS = round6(rate * load)
		total += rate * load
	}
	m.Total.OfferedRPS = round6(total)
	return &Point{Load: load, Metrics: *m}, nil
}

// Sweep runs every load point, in parallel, and assembles the report in load order.
func Sweep(ctx context.Context, cfg *SweepConfig) (*Report, error) {
	if len(cfg.Loads) == 0 {
		return nil, fmt.Errorf("empty load range")
	}
	points := make([]*Point, len(cfg.Loads))
	errs, err := Parallel(ctx, len(cfg.Loads), cfg.Parallel, func(i int) error {
		var err error
		points[i], err = RunPoint(cfg, cfg.Loads[i])
		return err
	}, func(i, finished int, err error) {
		if cfg.Progress != nil && err == nil {
			cfg.Progress(finished, len(cfg.Loads), points[i])
		}
	})
	if err != nil {
		return nil, err
	}
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("load %g: %w", cfg.Loads[i], err)
		}
	}
	rep := &Report{
		APIVersion: "plan/v1", Kind: ReportKind, Plan: cfg.PlanName, Strategy: cfg.Strategy,
		Policy: cfg.Policy.Policy, Params: cfg.Policy.Params, Trace: cfg.Arrival.Name,
		Seed: cfg.Seed, DurationUs: int64(cfg.Duration), Jitter: cfg.Jitter,
	}
	for a := range cfg.Dep.Apps {
		rate := cfg.Dep.Apps[a].RateRPS
		if a < len(cfg.BaseRPS) {
			rate = cfg.BaseRPS[a]
		}
		rep.BaseRPS = append(rep.BaseRPS, AppRate{App: cfg.Dep.Apps[a].Name, RPS: round6(rate)})
	}
	for _, p := range points {
		rep.Points = append(rep.Points, *p)
	}
	sort.SliceStable(rep.Points, func(i, j int) bool { return rep.Points[i].Load < rep.Points[j].Load })
	rep.MaxLoad99 = MaxLoadAt(rep.Points, 0.99)
	return rep, nil
}

// MaxLoadAt returns the highest load whose attainment (every application's, as in the
// paper) is ≥ target and whose next lower load, if any, passes too. Points must be sorted by
// load.
func MaxLoadAt(points []Point, target float64) float64 {
	return maxLoad(points, func(p *Point) bool {
		for _, a := range p.Apps {
			if a.Requests > 0 && a.Attainment < target {
				return false
			}
		}
		return true
	})
}

// MaxLoadAtMean is MaxLoadAt with the mean of the applications' attainments as the test
// (how the PPipe paper scores a model group: "at 1.0: 99.3/97.6/98.4%, mean 98.4%").
func MaxLoadAtMean(points []Point, target float64) float64 {
	return maxLoad(points, func(p *Point) bool {
		var sum float64
		n := 0
		for _, a := range p.Apps {
			if a.Requests > 0 {
				sum += a.Attainment
				n++
			}
		}
		return n == 0 || sum/float64(n) >= target
	})
}

func maxLoad(points []Point, pass func(*Point) bool) float64 {
	for i := len(points) - 1; i >= 0; i-- {
		if !pass(&points[i]) {
			continue
		}
		if i > 0 && !pass(&points[i-1]) {
			continue
		}
		return points[i].Load
	}
	return 0
}

// MaxLoadAtApp is MaxLoadAt for one application (index into Point.Apps).
func MaxLoadAtApp(points []Point, app int, target float64) float64 {
	one := make([]Point, len(points))
	for i, p := range points {
		one[i] = Point{Load: p.Load}
		if app < len(p.Apps) {
			one[i].Apps = []AppMetrics{p.Apps[app]}
		}
	}
	return MaxLoadAt(one, target)
}

// ParseLoadRange parses "lo:hi:step" (inclusive), a single value "0.5", or a list
// "0.5,0.9". Values must be positive and finite; the result is sorted ascending without
// duplicates. Steps are counted in integers so 0.05:1.0:0.05 has exactly 20 points.
func ParseLoadRange(s string) ([]float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("load range is empty")
	}
	num := func(x string) (float64, error) {
		v, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("load range %q: %q is not a number", s, x)
		}
		return v, nil
	}
	var out []float64
	if strings.Contains(s, ":") {
		parts := strings.Split(s, ":")
		if len(parts) != 3 {
			return nil, fmt.Errorf("load range %q: must be LO:HI:STEP", s)
		}
		lo, err := num(parts[0])
		if err != nil {
			return nil, err
		}
		hi, err := num(parts[1])
		if err != nil {
			return nil, err
		}
		step, err := num(parts[2])
		if err != nil {
			return nil, err
		}
		if step <= 0 {
			return nil, fmt.Errorf("load range %q: step must be > 0", s)
		}
		if hi < lo {
			return nil, fmt.Errorf("load range %q is empty: %g > %g", s, lo, hi)
		}
		n := int(math.Floor((hi-lo)/step+1e-9)) + 1
		if n > 10000 {
			return nil, fmt.Errorf("load range %q: %d points (at most 10000)", s, n)
		}
		for i := 0; i < n; i++ {
			v := lo + float64(i)*step
			if r := math.Round(v*1e9) / 1e9; !math.IsInf(r, 0) && !math.IsNaN(r) {
				v = r // 0.05·3 prints as 0.15, not 0.15000000000000002
			}
			out = append(out, v)
		}
	} else {
		for _, x := range strings.Split(s, ",") {
			v, err := num(x)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
	}
	sort.Float64s(out)
	uniq := out[:0]
	for i, v := range out {
		if !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("load range %q: load %g must be a positive finite number", s, v)
		}
		if i == 0 || v != out[i-1] {
			uniq = append(uniq, v)
		}
	}
	if len(uniq) == 0 {
		return nil, fmt.Errorf("load range %q is empty", s)
	}
	return uniq, nil
}
