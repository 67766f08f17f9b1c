package load

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/serve"
	"github.com/plan-dev/plan/sim"
)

func readPlan(t testing.TB, name string) *formats.Plan {
	t.Helper()
	p, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "..", "testdata", "serve", name), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOverload offers 3× the plan's capacity, open loop: every request must be answered
// (200 or a 503 drop, never a timeout or a transport error), the server's books must balance
// and no goroutine may outlive the run. The default run is 3 s on the one-GPU plan;
// PLAN_OVERLOAD_DURATION=60s PLAN_OVERLOAD_PLAN=demo-plan.json is the 60-second
// version.
func TestOverload(t *testing.T) {
	dur := 3 * time.Second
	if raceEnabled {
		dur = time.Second
	}
	if s := os.Getenv("PLAN_OVERLOAD_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		dur = d
	}
	planFile := "one-gpu.json"
	if s := os.Getenv("PLAN_OVERLOAD_PLAN"); s != "" {
		planFile = s
	}
	plan := readPlan(t, planFile)
	before := goruntime.NumGoroutine()
	s, err := serve.New(serve.Options{Plan: plan, Deploy: testDeploy, Policies: testPolicies})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 512, MaxIdleConnsPerHost: 512}}
	spec, _ := sim.ParseArrival("poisson")
	res, err := Run(context.Background(), Options{Deploy: testDeploy, URL: ts.URL, Sections: testSections, Load: 3, Duration: dur, Arrival: spec, Seed: 5, MaxConns: 512,
		// A lost request is one never answered: wait far longer than any answer can take.
		Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p := res.Report.Points[0].Total
	byStatus := map[int]int{}
	for _, x := range res.Samples {
		byStatus[x.Status]++
	}
	t.Logf("%s at 3× for %v: %d requests, %d completed, %d late, %d dropped %v, statuses %v, generator lag %v",
		planFile, dur, p.Requests, p.Completed, p.Late, p.Dropped, p.Drops, byStatus, res.Lag)
	for _, x := range res.Samples {
		if x.Status != 200 && x.Status != 503 {
			t.Errorf("request at %v: status %d (%s at %s): lost or failed", x.Arrival, x.Status, x.Reason, x.Stage)
			break
		}
	}
	if p.Dropped == 0 {
		t.Error("no drops at 3× capacity")
	}
	resp, err := client.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	mbody, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	mb := string(mbody)
	checkBalance(t, mb, p.Requests)
	_ = s.Shutdown(context.Background())
	ts.Close()
	client.CloseIdleConnections()
	deadline := time.Now().Add(5 * time.Second)
	for goruntime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := goruntime.NumGoroutine(); n > before+2 {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines: %d before, %d after\n%s", before, n, buf[:goruntime.Stack(buf, true)])
	}
}

// BenchmarkExecutorOverhead measures what the server adds to a request: at 5,000 requests/s (Poisson) on a plan
// with 3× that capacity (32 emulated L4s, 2 ms per request, batch 1, so nothing queues),
// the response latency minus the emulated work: as the client sees it (the loopback HTTP
// round trip, JSON and both sides' scheduling included) and as the server reports it (from
// the driver's accepting the request to its answer), p50 and p99 in µs. Each iteration is a
// 2-second run; use -benchtime=1x (or 3x).
func BenchmarkExecutorOverhead(b *testing.B) {
	plan := readPlan(b, "wide.json")
	spec, _ := sim.ParseArrival("poisson")
	for i := 0; i < b.N; i++ {
		s, err := serve.New(serve.Options{Plan: plan, Deploy: testDeploy, Policies: testPolicies})
		if err != nil {
			b.Fatal(err)
		}
		ts := httptest.NewServer(s)
		client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1024, MaxIdleConnsPerHost: 1024}}
		res, err := Run(context.Background(), Options{Deploy: testDeploy, URL: ts.URL, Sections: testSections, Rate: 5000, Duration: 2 * time.Second, Arrival: spec, Seed: uint64(i + 1), Client: client})
		if err != nil {
			b.Fatal(err)
		}
		_ = s.Shutdown(context.Background())
		ts.Close()
		client.CloseIdleConnections()
		const work = 2 * time.Millisecond
		var over, srv []time.Duration
		bad := 0
		for _, x := range res.Samples {
			if x.Status != 200 {
				bad++
				continue
			}
			over = append(over, x.Latency-work)
			srv = append(srv, x.ServerLatency-work)
		}
		q := func(xs []time.Duration, p float64) float64 {
			if len(xs) == 0 {
				return 0
			}
			sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
			return float64(xs[min(int(p*float64(len(xs))), len(xs)-1)].Microseconds())
		}
		b.ReportMetric(q(over, 0.50), "p50-overhead-µs")
		b.ReportMetric(q(over, 0.99), "p99-overhead-µs")
		b.ReportMetric(q(srv, 0.50), "p50-server-overhead-µs")
		b.ReportMetric(q(srv, 0.99), "p99-server-overhead-µs")
		b.ReportMetric(float64(len(res.Samples))/2, "req/s")
		b.ReportMetric(float64(bad), "not-200")
		b.ReportMetric(float64(res.Lag.Microseconds()), "generator-lag-µs")
	}
}

// checkBalance checks the server's counters against the client's count: every request was
// either refused at the door (plan_drops_total at stage intake) or accepted by the driver
// (plan_requests_total), and every accepted one was answered exactly once
// (plan_responses_total), none left in flight.
func checkBalance(t *testing.T, metrics string, sent int64) {
	t.Helper()
	accepted := metricSum(metrics, "plan_requests_total")
	answered := metricSum(metrics, "plan_responses_total")
	door := metricSum(metrics, "plan_drops_total", `stage="intake"`)
	inflight := metricSum(metrics, "plan_requests_in_flight")
	if accepted+door != float64(sent) || answered != accepted || inflight != 0 {
		t.Errorf("client sent %d; server: %v accepted + %v refused at the door, %v answered, %v in flight", sent, accepted, door, answered, inflight)
	}
}

// metricSum adds the values of the series of family name whose labels contain every one of
// want (the text exposition format).
func metricSum(text, name string, want ...string) float64 {
	var sum float64
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(line, w)
		}
		if !ok {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
			sum += v
		}
	}
	return sum
}
