package sim

import (
	"context"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	dpppipe "github.com/plan-dev/plan/dataplane/ppipe"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
)

// TestSwitchedCut: the switches cut the trace where each takes over; every fleet is held
// from its decision until the next plan serves (or the arrivals end), a superseded one
// until the decision that supersedes it, a plan decided but never serving too.
func TestSwitchedCut(t *testing.T) {
	a, b, c := &SwitchPlan{Name: "a"}, &SwitchPlan{Name: "b"}, &SwitchPlan{Name: "c"}
	type seg struct {
		name                    string
		from, to, decided, held dataplane.Time
		served                  bool
	}
	cases := []struct {
		name     string
		switches []Switch
		want     []seg
	}{
		{name: "static", switches: []Switch{{Plan: a}}, want: []seg{{"a", 0, 100, 0, 100, true}}},
		{name: "reactive: the old plan serves while the new one loads", switches: []Switch{{Plan: a}, {Decided: 40, From: 50, Plan: b}},
			want: []seg{{"a", 0, 50, 0, 50, true}, {"b", 50, 100, 40, 100, true}}},
		{name: "loaded ahead", switches: []Switch{{Plan: a}, {Decided: 30, From: 40, Plan: b}},
			want: []seg{{"a", 0, 40, 0, 40, true}, {"b", 40, 100, 30, 100, true}}},
		{name: "superseded while loading", switches: []Switch{{Plan: a}, {Decided: 40, From: 60, Plan: b}, {Decided: 50, From: 55, Plan: c}},
			want: []seg{{"a", 0, 55, 0, 55, true}, {"b", 60, 0, 40, 50, false}, {"c", 55, 100, 50, 100, true}}},
		{name: "decided, never serving", switches: []Switch{{Plan: a}, {Decided: 90, From: 110, Plan: b}},
			want: []seg{{"a", 0, 100, 0, 100, true}, {"b", 110, 100, 90, 100, false}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, s := range tc.switches {
				s.Plan.Deploy = func() (*dataplane.Deployment, dataplane.Policy, error) { return nil, nil, nil }
			}
			segs, err := (&Switched{Switches: tc.switches, End: 100}).segments()
			if err != nil {
				t.Fatal(err)
			}
			var got []seg
			for _, s := range segs {
				got = append(got, seg{s.Plan.Name, s.From, s.To, s.Decided, s.Held, s.served})
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("segments\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	bad := []Switch{{Plan: a}, {Decided: 50, From: 40, Plan: b}}
	if _, err := (&Switched{Switches: bad, End: 100}).segments(); err == nil {
		t.Error("a switch serving before its decision: no error")
	}
}

// switchedFixture is the demo plan twice (8 and 16 GPUs claimed) over 10 s of arrivals at
// 0.9 of its rate, switched at 5 s after a 0.5 s load, reporting four spans.
func switchedFixture(t *testing.T, onFinish func(seg int, r *dataplane.Request)) *Switched {
	t.Helper()
	p, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "testdata", "serve", "demo-plan.json"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	dep, err := dpppipe.FromPlan(p)
	if err != nil {
		t.Fatal(err)
	}
	var ts []dataplane.Time
	gap := dataplane.Time(1e6 / (0.9 * dep.Apps[0].RateRPS))
	for at := dataplane.Time(0); at < 10*dataplane.Second; at += gap {
		ts = append(ts, at)
	}
	deploy := func() (*dataplane.Deployment, dataplane.Policy, error) {
		pol, err := testPolicies.New(dep, dataplane.Config{Policy: "ppipe"}, "")
		return dep, pol, err
	}
	small := &SwitchPlan{Name: "small", GPUs: 8, CostPerHour: 1, Deploy: deploy}
	large := &SwitchPlan{Name: "large", GPUs: 16, CostPerHour: 2, Deploy: deploy}
	return &Switched{
		Switches: []Switch{{Plan: small}, {Decided: 4500 * dataplane.Millisecond, From: 5 * dataplane.Second, Plan: large}},
		End:      10 * dataplane.Second,
		Spans:    []dataplane.Time{0, 2500 * dataplane.Millisecond, 5 * dataplane.Second, 7500 * dataplane.Millisecond, 10 * dataplane.Second},
		Segment: func(k int, _ *dataplane.Deployment, from, to dataplane.Time) (*SegmentRun, error) {
			lo := sort.Search(len(ts), func(i int) bool { return ts[i] >= from })
			hi := sort.Search(len(ts), func(i int) bool { return ts[i] >= to })
			o := Options{Duration: to - from, Seed: uint64(k + 1), Jitter: 0.05}
			if onFinish != nil {
				o.OnFinish = func(_ dataplane.Time, r *dataplane.Request) { onFinish(k, r) }
			}
			rel := make([]dataplane.Time, hi-lo)
			for i, x := range ts[lo:hi] {
				rel[i] = x - from
			}
			return &SegmentRun{Sources: []Source{&Times{T: rel}}, Origin: from, Options: o}, nil
		},
	}
}

// TestSwitchedSpans: every arrival is answered once, on the plan that admitted it (the old
// plan's last requests finish after the new one serves: they drain, not move); the spans
// count each request by its arrival and add up to the total; GPU-hours and cost hold each
// fleet from its decision; the results do not depend on the parallelism.
func TestSwitchedSpans(t *testing.T) {
	var after, answered, outside int
	r := switchedFixture(t, func(seg int, q *dataplane.Request) {
		// Segment seg's engine counts from its origin: 0, then the switch at 5 s.
		at := dataplane.Time(seg)*5*dataplane.Second + q.Arrival
		if at < dataplane.Time(seg)*5*dataplane.Second || at >= dataplane.Time(seg+1)*5*dataplane.Second {
			outside++
		}
		if seg == 0 && q.Done > 5*dataplane.Second {
			after++
		}
		answered++
	})
	res, err := RunSwitched(context.Background(), 1, r)
	if err != nil {
		t.Fatal(err)
	}
	got := res[0]
	if len(got.Segments) != 2 || got.Requests != int64(answered) || got.Requests == 0 || outside > 0 {
		t.Fatalf("%d segments, %d requests, %d answered, %d outside their segment", len(got.Segments), got.Requests, answered, outside)
	}
	var sum SpanCount
	for i, s := range got.Spans {
		if s.Requests == 0 {
			t.Errorf("span %d: no requests", i)
		}
		sum.Requests += s.Requests
		sum.Met += s.Met
	}
	if sum.Requests != got.Requests || sum.Met != got.Met {
		t.Errorf("spans add up to %+v, the total is %d requests, %d on time", sum, got.Requests, got.Met)
	}
	if after == 0 {
		t.Error("no request of the old plan finished after the switch: nothing drained on it")
	}
	// small 8 GPUs over [0, 5 s), large 16 over [4.5 s, 10 s).
	if want := round6((8*5 + 16*5.5) / 3600.0); got.GPUHours != want {
		t.Errorf("GPU-hours %v, want %v", got.GPUHours, want)
	}
	if want := (1*5 + 2*5.5) / 3600.0; round6(got.Cost) != round6(want) {
		t.Errorf("cost %v, want %v", got.Cost, want)
	}
	par, err := RunSwitched(context.Background(), 4, switchedFixture(t, nil), switchedFixture(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range par {
		if p.Requests != got.Requests || p.Met != got.Met || !reflect.DeepEqual(p.Spans, got.Spans) {
			t.Errorf("in parallel: %d requests, %d on time, spans %+v; in order %d, %d, %+v", p.Requests, p.Met, p.Spans, got.Requests, got.Met, got.Spans)
		}
	}
}
