//go:build unix

package load

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	dpppipe "github.com/plan-dev/plan/dataplane/ppipe"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/serve"
	"github.com/plan-dev/plan/sim"
)

// BenchmarkServeVsSimulate measures overload behaviour in one process: for each load factor
// (PLAN_BENCH_LOADS, default 0.9,2,3) it simulates the plan (PLAN_BENCH_PLAN, default
// testdata/serve/demo-plan.json) and serves it to `plan load`'s generator on the same trace
// (PLAN_BENCH_DURATION, default 2 s; bench/RESULTS.md's runs are 60 s), and reports serve's goodput
// as a share of simulate's, the attainment difference, the p99 of answered (admitted)
// requests against the SLO, requests lost, and the process's CPU per request (server and
// generator together: serve/load/bench-serve.sh measures the server alone, out of process,
// with its RSS). The targets (goodput ≥ 90% of simulate at load 2, ≥ 80% at 3, attainment
// within 1 point at 0.9, p99 ≤ SLO, nothing lost) need a machine that gives the two
// processes their cores.
func BenchmarkServeVsSimulate(b *testing.B) {
	path := filepath.Join("..", "..", "testdata", "serve", "demo-plan.json")
	if s := os.Getenv("PLAN_BENCH_PLAN"); s != "" {
		path = s
	}
	plan, err := formats.ReadInto[*formats.Plan](path, intree.Sections())
	if err != nil {
		b.Fatal(err)
	}
	dur := 2 * time.Second
	if s := os.Getenv("PLAN_BENCH_DURATION"); s != "" {
		if dur, err = time.ParseDuration(s); err != nil {
			b.Fatal(err)
		}
	}
	loads := []float64{0.9, 2, 3}
	if s := os.Getenv("PLAN_BENCH_LOADS"); s != "" {
		loads = nil
		for _, f := range strings.Split(s, ",") {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil {
				b.Fatal(err)
			}
			loads = append(loads, v)
		}
	}
	dep, _, err := testDeploy(plan)
	if err != nil {
		b.Fatal(err)
	}
	spec, _ := sim.ParseArrival("poisson")
	for _, lf := range loads {
		b.Run(fmt.Sprint(lf), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				pt, err := sim.RunPoint(&sim.SweepConfig{Policies: dpppipe.Registry(), Dep: dep, Arrival: spec, Loads: []float64{lf},
					Duration: dataplane.Time(dur / time.Microsecond), Seed: 1}, lf)
				if err != nil {
					b.Fatal(err)
				}
				s, err := serve.New(serve.Options{Plan: plan, Deploy: testDeploy, Policies: testPolicies})
				if err != nil {
					b.Fatal(err)
				}
				ts := httptest.NewServer(s)
				cpu0 := cpuTime()
				res, err := Run(context.Background(), Options{Deploy: testDeploy, URL: ts.URL, Sections: testSections, Load: lf, Duration: dur, Arrival: spec, Seed: 1})
				cpu := cpuTime() - cpu0
				_ = s.Shutdown(context.Background())
				ts.Close()
				if err != nil {
					b.Fatal(err)
				}
				got, want := res.Report.Points[0].Total, pt.Metrics.Total
				var lat []time.Duration
				slo := time.Duration(dep.Apps[0].SLO) * time.Microsecond
				for _, x := range res.Samples {
					if x.Status == 200 {
						lat = append(lat, x.Latency)
					}
				}
				sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
				var p99 time.Duration
				if len(lat) > 0 {
					p99 = lat[min(len(lat)*99/100, len(lat)-1)]
				}
				share := 0.0
				if want.GoodputRPS > 0 {
					share = got.GoodputRPS / want.GoodputRPS
				}
				b.ReportMetric(share*100, "%-of-sim-goodput")
				b.ReportMetric((got.Attainment-want.Attainment)*100, "attainment-diff-pts")
				b.ReportMetric(float64(p99.Microseconds())/float64(slo.Microseconds()), "p99/SLO")
				b.ReportMetric(float64(res.Outcomes.ClientErrors), "lost")
				b.ReportMetric(float64(res.Outcomes.Cancelled), "cancelled")
				b.ReportMetric(float64(cpu.Microseconds())/float64(max(len(res.Samples), 1)), "cpu-µs/req")
				b.ReportMetric(float64(res.Lag.Milliseconds()), "generator-lag-ms")
			}
		})
	}
}

// cpuTime is the process's user + system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
