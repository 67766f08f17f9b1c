package autopilot

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	ap "github.com/plan-dev/plan/dataplane/autopilot"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
	"github.com/plan-dev/plan/internal/base/testmode"
	"github.com/plan-dev/plan/serve"
)

// oneSolver answers every demand with the same candidate.
type oneSolver struct {
	c     ap.Candidate
	calls int
	mu    sync.Mutex
}

func (o *oneSolver) Solve(context.Context, ap.Demand) (ap.Candidate, error) {
	o.mu.Lock()
	o.calls++
	o.mu.Unlock()
	return o.c, nil
}

// TestAutopilotSwitchUnderLoad: at 0.9 of the served plan's rate the loop switches plans
// (the first plan claims five times the capacity, so the load reads as below its band) while
// requests keep arriving; every request id is answered exactly once, with 200 or a
// policy's 503, and the answers counted by the server equal the requests sent.
func TestAutopilotSwitchUnderLoad(t *testing.T) {
	p1 := loadPlan(t, "one-gpu.json")
	p2 := loadPlan(t, "one-gpu.json")
	p2.Metadata.Name = "one-gpu-v2"
	rate := ppipesec.PlanOf(p1).Models[0].ThroughputRPS
	sol := &oneSolver{c: ap.Candidate{GPUs: 1, Capacity: []float64{1.25 * rate}, Plan: p2}}
	pilot := New(Options{
		Loop:   ap.Config{Window: 100 * dataplane.Millisecond, Hold: 1, MinInterval: 60 * dataplane.Second},
		Solver: sol, Apps: []string{"m1"},
		Describe: func(*formats.Plan) (ap.Candidate, error) {
			// Five times the plan's rate: the load's peak slices (10 ms of a 100 ms window,
			// a couple of requests each) read as below half of it.
			return ap.Candidate{GPUs: 2, Capacity: []float64{5 * rate}}, nil
		},
	})
	s, ts := testServer(t, serve.Options{Plan: p1, Frontends: []serve.Frontend{pilot}})
	if err := pilot.Start(); err != nil {
		t.Fatal(err)
	}
	old := s.ActiveDigest()
	n := int(0.9 * rate * 2) // two seconds at 0.9 of the plan's rate
	gap := time.Duration(float64(time.Second) / (0.9 * rate))
	type answer struct {
		code      int
		id, error string
	}
	answers := make([]answer, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := strings.Replace(inferBody(float32(i)), `"id":"r1"`, fmt.Sprintf(`"id":"req-%d"`, i), 1)
			resp, err := http.Post(ts.URL+"/v2/models/m1/infer", "application/json", strings.NewReader(body))
			if err != nil {
				answers[i].code = -1
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var r struct {
				ID    string `json:"id"`
				Error string `json:"error"`
			}
			_ = json.Unmarshal(b, &r)
			answers[i] = answer{resp.StatusCode, r.ID, r.Error}
		}()
		time.Sleep(time.Until(start.Add(time.Duration(i+1) * gap)))
	}
	wg.Wait()
	seen := map[string]int{}
	ok := 0
	for i, a := range answers {
		switch a.code {
		case 200:
			ok++
			seen[a.id]++
			if a.id != fmt.Sprintf("req-%d", i) {
				t.Errorf("request %d answered with id %q", i, a.id)
			}
		case 503:
		default:
			t.Errorf("request %d: status %d", i, a.code)
		}
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("id %s answered %d times", id, k)
		}
	}
	if s.ActiveDigest() == old {
		t.Fatalf("no switch: solver called %d times; status %+v", sol.calls, pilot.loop.Status())
	}
	_, mt := get(t, ts.URL+"/metrics")
	var answered float64
	for _, o := range []string{"completed", "late", "dropped", "error", "cancelled"} {
		answered += metricValue(string(mt), fmt.Sprintf(`plan_responses_total{model="m1",outcome="%s"}`, o))
	}
	// Requests refused at the door (before their body was read) are answered there.
	for _, line := range strings.Split(string(mt), "\n") {
		if strings.HasPrefix(line, `plan_drops_total{model="m1",reason=`) && strings.Contains(line, `stage="intake"`) {
			var v float64
			fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v)
			answered += v
		}
	}
	if int(answered) != n {
		t.Errorf("the server answered %g requests, %d were sent", answered, n)
	}
	if metricValue(string(mt), "plan_autopilot_switches_total") != 1 {
		t.Errorf("plan_autopilot_switches_total != 1:\n%s", mt)
	}
	code, body := get(t, ts.URL+"/v1/autopilot")
	var st Status
	if code != 200 || json.Unmarshal(body, &st) != nil || st.Switches != 1 || st.Current.Digest != s.ActiveDigest() {
		t.Errorf("GET /v1/autopilot: %d %s", code, body)
	}
	if answered != float64(n) {
		t.Logf("metrics:\n%s", mt)
	}
	t.Logf("%d requests, %d answered 200, switch %s → %s", n, ok, old[:15], s.ActiveDigest()[:15])
}

// TestAutopilotAdvise: advise mode recommends and never switches; the recommendation is
// served at /v1/autopilot/plan.
func TestAutopilotAdvise(t *testing.T) {
	p1 := loadPlan(t, "one-gpu.json")
	p2 := loadPlan(t, "one-gpu.json")
	p2.Metadata.Name = "one-gpu-v2"
	pilot := New(Options{
		Loop:   ap.Config{Mode: ap.Advise, Window: 50 * dataplane.Millisecond, Hold: 1},
		Solver: &oneSolver{c: ap.Candidate{GPUs: 1, Capacity: []float64{10}, Plan: p2}}, Apps: []string{"m1"},
		Describe: func(*formats.Plan) (ap.Candidate, error) {
			return ap.Candidate{GPUs: 2, Capacity: []float64{1000}}, nil
		},
	})
	s, ts := testServer(t, serve.Options{Plan: p1, Frontends: []serve.Frontend{pilot}})
	if err := pilot.Start(); err != nil {
		t.Fatal(err)
	}
	old := s.ActiveDigest()
	deadline := time.Now().Add(5 * time.Second)
	for pilot.Recommended() == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if pilot.Recommended() == nil {
		t.Fatalf("no recommendation; status %+v", pilot.loop.Status())
	}
	if s.ActiveDigest() != old {
		t.Error("advise mode switched plans")
	}
	code, body := get(t, ts.URL+"/v1/autopilot/plan")
	if code != 200 || !strings.Contains(string(body), "one-gpu-v2") {
		t.Errorf("GET /v1/autopilot/plan: %d %.200s", code, body)
	}
	code, body = get(t, ts.URL+"/v1/autopilot")
	if code != 200 || !strings.Contains(string(body), "advise mode") {
		t.Errorf("GET /v1/autopilot: %d %s", code, body)
	}
}

// TestAutopilotAdopt: a plan installed from outside the loop (PUT /v1/plan) becomes the
// loop's current plan at its next tick.
func TestAutopilotAdopt(t *testing.T) {
	p1 := loadPlan(t, "one-gpu.json")
	p2 := loadPlan(t, "one-gpu.json")
	p2.Metadata.Name = "operator"
	pilot := New(Options{
		Loop:   ap.Config{Window: 20 * dataplane.Millisecond},
		Solver: &oneSolver{}, Apps: []string{"m1"},
		Describe: func(*formats.Plan) (ap.Candidate, error) {
			return ap.Candidate{GPUs: 1, Capacity: []float64{200}}, nil
		},
	})
	s, _ := testServer(t, serve.Options{Plan: p1, Frontends: []serve.Frontend{pilot}})
	if err := pilot.Start(); err != nil {
		t.Fatal(err)
	}
	if err := pilot.Start(); err == nil || !strings.Contains(err.Error(), "started already") {
		t.Errorf("second Start: %v", err)
	}
	if err := s.Reload(context.Background(), p2); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for pilot.loop.Current() != s.ActiveDigest() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	ds := pilot.loop.Decisions()
	if pilot.loop.Current() != s.ActiveDigest() {
		testmode.SkipIfLate(t, "the loop did not tick within 5 s")
	}
	if pilot.loop.Current() != s.ActiveDigest() || len(ds) == 0 || ds[len(ds)-1].Action != "adopt" {
		t.Errorf("loop's plan %s, served %s; decisions %+v", pilot.loop.Current(), s.ActiveDigest(), ds)
	}
}

// TestAutopilotOverBudget: when the best plan within the GPU budget cannot serve the load,
// the server switches to it, and /v1/autopilot, the metric and the log say so.
func TestAutopilotOverBudget(t *testing.T) {
	p1 := loadPlan(t, "one-gpu.json")
	p2 := loadPlan(t, "one-gpu.json")
	p2.Metadata.Name = "within-budget"
	var logs syncLog
	pilot := New(Options{
		Loop:   ap.Config{Window: 50 * dataplane.Millisecond, Hold: 1, GPUBudget: 1},
		Solver: &oneSolver{c: ap.Candidate{GPUs: 1, Capacity: []float64{2}, OverBudget: true, Plan: p2}}, Apps: []string{"m1"},
		Describe: func(*formats.Plan) (ap.Candidate, error) {
			return ap.Candidate{GPUs: 1, Capacity: []float64{1}}, nil // any load is above it
		},
	})
	s, ts := testServer(t, serve.Options{Plan: p1, Frontends: []serve.Frontend{pilot}, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err := pilot.Start(); err != nil {
		t.Fatal(err)
	}
	old := s.ActiveDigest()
	deadline := time.Now().Add(5 * time.Second)
	for s.ActiveDigest() == old && time.Now().Before(deadline) {
		post(t, ts.URL+"/v2/models/m1/infer", inferBody(1))
		time.Sleep(5 * time.Millisecond)
	}
	code, body := get(t, ts.URL+"/v1/autopilot")
	var st Status
	if code != 200 || json.Unmarshal(body, &st) != nil || !st.OverBudget || !strings.Contains(st.Note, "more GPUs than the budget (1)") {
		t.Errorf("GET /v1/autopilot: %d %s", code, body)
	}
	_, mt := get(t, ts.URL+"/metrics")
	if metricValue(string(mt), "plan_autopilot_over_budget") != 1 {
		t.Error("plan_autopilot_over_budget != 1")
	}
	if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "GPU budget 1") {
		t.Errorf("log: %s", l)
	}
}

// syncLog is a log sink safe for the server's goroutines.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// prefetchSolver is oneSolver that also solves ahead: it records the plans it prefetched
// around and holds each prefetch until its context ends.
type prefetchSolver struct {
	oneSolver
	around chan ap.Candidate
	ended  chan error
}

func (p *prefetchSolver) PrefetchAround(ctx context.Context, c ap.Candidate) (int, error) {
	p.around <- c
	<-ctx.Done()
	p.ended <- ctx.Err()
	return 0, ctx.Err()
}

// TestAutopilotPrefetch: the autopilot solves ahead around the plan it serves at start and
// around the plan it switched to (superseding the first prefetch), and Close ends the
// prefetch under way.
func TestAutopilotPrefetch(t *testing.T) {
	p1 := loadPlan(t, "one-gpu.json")
	p2 := loadPlan(t, "one-gpu.json")
	p2.Metadata.Name = "bigger"
	sol := &prefetchSolver{oneSolver: oneSolver{c: ap.Candidate{GPUs: 3, Capacity: []float64{1e6}, Plan: p2}},
		around: make(chan ap.Candidate, 4), ended: make(chan error, 4)}
	pilot := New(Options{
		Loop:   ap.Config{Window: 50 * dataplane.Millisecond, Hold: 1},
		Solver: sol, Apps: []string{"m1"}, SolveTimeout: time.Hour,
		Describe: func(*formats.Plan) (ap.Candidate, error) {
			return ap.Candidate{GPUs: 1, Capacity: []float64{1}}, nil // any load is above it
		},
	})
	s, ts := testServer(t, serve.Options{Plan: p1, Frontends: []serve.Frontend{pilot}})
	if err := pilot.Start(); err != nil {
		t.Fatal(err)
	}
	wait := func(what string) ap.Candidate {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case c := <-sol.around:
				return c
			case <-deadline:
				t.Fatalf("no prefetch %s; status %+v", what, pilot.loop.Status())
			case <-time.After(5 * time.Millisecond):
				post(t, ts.URL+"/v2/models/m1/infer", inferBody(1))
			}
		}
	}
	if c := wait("at start"); c.GPUs != 1 || c.Digest != s.ActiveDigest() {
		t.Errorf("prefetched at start around %d GPUs (%s), want the served plan's 1 (%s)", c.GPUs, c.Digest, s.ActiveDigest())
	}
	if c := wait("after the switch"); c.GPUs != 3 {
		t.Errorf("prefetched after the switch around %d GPUs, want the new plan's 3", c.GPUs)
	}
	if err := <-sol.ended; err == nil {
		t.Error("the switch did not end the prefetch around the old plan")
	}
	if err := pilot.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-sol.ended:
		if err == nil {
			t.Error("the prefetch ended without an error")
		}
	default:
		t.Error("Close returned with the prefetch still under way")
	}
}

// TestAutopilotObservesRefused: the autopilot observes demand, not admissions. Requests
// the server refuses for capacity (here --max-inflight 1 under bursts of concurrent
// requests) count in the window as those it admits: the window (one hour, closed by the
// test's own tick) holds every request sent, whatever share of them was refused.
func TestAutopilotObservesRefused(t *testing.T) {
	p := loadPlan(t, "one-gpu.json")
	pilot := New(Options{
		Loop:   ap.Config{Window: 3600 * dataplane.Second, Hold: 1000},
		Solver: &oneSolver{}, Apps: []string{"m1"},
		Describe: func(*formats.Plan) (ap.Candidate, error) {
			return ap.Candidate{GPUs: 1, Capacity: []float64{100}}, nil
		},
	})
	s, ts := testServer(t, serve.Options{Plan: p, Frontends: []serve.Frontend{pilot}, MaxInFlight: 1})
	if err := pilot.Start(); err != nil {
		t.Fatal(err)
	}
	sent, refused := 0, 0
	var mu sync.Mutex
	for burst := 0; burst < 20 && refused < 10; burst++ {
		var wg sync.WaitGroup
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := http.Post(ts.URL+"/v2/models/m1/infer", "application/json", strings.NewReader(inferBody(1)))
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				mu.Lock()
				defer mu.Unlock()
				sent++
				if resp.StatusCode == 503 && strings.Contains(string(b), "max-inflight") {
					refused++
				}
			}()
		}
		wg.Wait()
	}
	if refused == 0 {
		t.Fatalf("no request of %d was refused: the test saw no refusal to count", sent)
	}
	pilot.loop.Tick(s.Clock().Now() + 3600*dataplane.Second)
	obs := pilot.loop.Status().Observed
	if len(obs) != 1 {
		t.Fatalf("observed %+v, want one closed window", obs)
	}
	if got := int(obs[0].Rate*3600 + 0.5); got != sent {
		t.Errorf("the window counted %d requests; %d were sent (%d refused for --max-inflight)", got, sent, refused)
	}
	t.Logf("%d sent, %d refused for --max-inflight", sent, refused)
}
