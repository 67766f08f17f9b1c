package pard

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/pardsec"
	demo "github.com/plan-dev/plan/internal/onformats/demo/pard"
	"github.com/plan-dev/plan/planner"
)

// fillInputs is tm at 100 rps and lv at 50 rps (the autopilot fixture's mix) on gpus 2080Ti.
func fillInputs(gpus int) Inputs {
	w := demo.Workload(0)
	pardsec.SetPipelines(w, nil)
	for _, a := range []struct {
		name string
		rate float64
	}{{"tm", 100}, {"lv", 50}} {
		app, _ := demo.AppByName(a.name)
		pardsec.SetPipelines(w, append(pardsec.PipelinesOf(w), demo.Pipeline(app, a.rate)))
	}
	in := inputs(w)
	in.Cluster.GPUs[0].Count = gpus
	return in
}

// TestFillCapacityGrowsWithGPUs: a plan solved with Fill provisions the most rate
// its cluster serves at the workload's mix, so its capacity (PlanCapacity) grows with the
// GPUs the autopilot's ladder gives the planner, covers the plan's rate_rps, keeps the mix
// (tm twice lv) and uses the cluster; without Fill the plan is the workload's, whatever the
// GPUs (the ladder could not size it), and the autopilot's capacity is its rates.
func TestFillCapacityGrowsWithGPUs(t *testing.T) {
	cases := []struct {
		gpus     int
		fill     bool
		wantGPUs int // GPUs provisioned at least
	}{
		{8, true, 8}, {16, true, 15}, {32, true, 31}, {64, true, 62},
		{16, false, 0}, {64, false, 0},
	}
	prev := map[bool]float64{}
	for _, tc := range cases {
		p, err := Provision(context.Background(), fillInputs(tc.gpus), Options{Fill: tc.fill})
		skipWithoutSolver(t, err)
		if err != nil {
			t.Fatalf("%d GPUs, fill %v: %v", tc.gpus, tc.fill, err)
		}
		c, err := PlanCapacity(p)
		if err != nil {
			t.Fatal(err)
		}
		used := 0
		for _, a := range pardsec.PlanOf(p).Apps {
			used += GPUs(a)
			if c[a.Name] < a.RateRPS*(1-1e-9) {
				t.Errorf("%d GPUs, fill %v: %s capacity %.1f below its rate_rps %.1f", tc.gpus, tc.fill, a.Name, c[a.Name], a.RateRPS)
			}
		}
		ac, err := AutopilotCapacity(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range pardsec.PlanOf(p).Apps {
			if want := map[bool]float64{true: c[a.Name], false: a.RateRPS}[tc.fill]; ac[a.Name] != want {
				t.Errorf("%d GPUs, fill %v: %s: the autopilot's capacity %.1f, want %.1f", tc.gpus, tc.fill, a.Name, ac[a.Name], want)
			}
		}
		var rec Flags
		if err := planner.ReadOptions(p.Provenance.Options, &rec); err != nil || rec.Fill != tc.fill {
			t.Errorf("%d GPUs: options record fill %v (%v), want %v", tc.gpus, rec.Fill, err, tc.fill)
		}
		t.Logf("%d GPUs, fill %v: %d provisioned, tm %.1f lv %.1f rps (rates %.1f, %.1f)", tc.gpus, tc.fill, used, c["tm"], c["lv"], pardsec.PlanOf(p).Apps[0].RateRPS, pardsec.PlanOf(p).Apps[1].RateRPS)
		if tc.fill {
			if used < tc.wantGPUs || used > tc.gpus {
				t.Errorf("%d GPUs: %d provisioned, want %d..%d", tc.gpus, used, tc.wantGPUs, tc.gpus)
			}
			if c["tm"] <= prev[true] {
				t.Errorf("%d GPUs: tm capacity %.1f does not grow (%.1f on fewer)", tc.gpus, c["tm"], prev[true])
			}
			if r := pardsec.PlanOf(p).Apps[0].RateRPS / pardsec.PlanOf(p).Apps[1].RateRPS; r < 1.999 || r > 2.001 {
				t.Errorf("%d GPUs: rates %v keep the mix 2:1? ratio %.4f", tc.gpus, pardsec.PlanOf(p).Apps, r)
			}
		} else if prev[false] > 0 && c["tm"] != prev[false] {
			t.Errorf("without fill the capacity follows the GPUs: %.1f, was %.1f", c["tm"], prev[false])
		}
		prev[tc.fill] = c["tm"]
	}
}

// TestFillBadInput: fill with the cost objective is refused (ErrBadInput, naming the
// flags); a cluster with fewer GPUs than one worker per module serves no rate at all.
func TestFillBadInput(t *testing.T) {
	cost := fillInputs(32)
	price := 1.0
	cost.Cluster.GPUs[0].PricePerHour = &price
	cases := []struct {
		name string
		in   Inputs
		o    Options
		want string
	}{
		{"cost objective", cost, Options{Fill: true, Objective: planner.ObjectiveCost}, "--fill: true: conflicts with --objective cost"},
		{"too few GPUs", fillInputs(4), Options{Fill: true}, "fill: the cluster serves no rate of the pipelines"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Provision(context.Background(), tc.in, tc.o)
			skipWithoutSolver(t, err)
			if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want ErrBadInput mentioning %q", err, tc.want)
			}
		})
	}
}

// TestPlanCapacity: the capacity is the slowest module's workers·b/d(b) per pipeline; a
// module that cannot serve is an error naming it.
func TestPlanCapacity(t *testing.T) {
	mk := func(mods ...pardsec.ModulePlan) *formats.Plan {
		return pardsec.SetPlan(&formats.Plan{}, &pardsec.PARDPlan{Apps: []pardsec.PARDApp{{Name: "a", Modules: mods}}})
	}
	cases := []struct {
		name string
		p    *formats.Plan
		want float64
		err  string
	}{
		{"one module", mk(pardsec.ModulePlan{Name: "m", Workers: 2, Batch: 4, LatencyUs: 20000}), 400, ""},
		{"slowest module", mk(pardsec.ModulePlan{Name: "m", Workers: 2, Batch: 4, LatencyUs: 20000},
			pardsec.ModulePlan{Name: "n", Workers: 1, Batch: 8, LatencyUs: 40000}), 200, ""},
		{"no latency", mk(pardsec.ModulePlan{Name: "m", Workers: 2, Batch: 4}), 0, "pard.apps[0].modules[0] (m): workers 2, batch 4, latency_us 0"},
		{"no pard section", &formats.Plan{}, 0, "no pard section"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := PlanCapacity(tc.p)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || c["a"] != tc.want {
				t.Errorf("capacity %v (%v), want %g", c, err, tc.want)
			}
		})
	}
}
