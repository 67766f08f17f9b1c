package dyorcbench

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestQuickShape runs a reduced bench (GILL and image, short trace) and checks its shape:
// every policy ran, DyOrc's accuracy is reported, scaling rows are present.
func TestQuickShape(t *testing.T) {
	o := Options{Apps: []string{"gill", "image"}, Seeds: 1, Seconds: 120, GPUs: 4, Load: 1, Scale: []int{4, 8}, Parallel: 1}
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 2*len(AllPolicies) || len(res.Scale) != 2 {
		t.Fatalf("%d rows, %d scale rows", len(res.Rows), len(res.Scale))
	}
	for _, r := range res.Rows {
		if r.Requests == 0 || r.MeanMs <= 0 {
			t.Fatalf("%+v", r)
		}
		if r.Policy == "dyorc" && r.StepAcc < 0 {
			t.Fatalf("no accuracy: %+v", r)
		}
	}
}

// TestTiming (DYORC_TIMING=1) prints how long each app × policy run takes.
func TestTiming(t *testing.T) {
	if os.Getenv("DYORC_TIMING") == "" {
		t.Skip()
	}
	for _, a := range AllApps {
		dep, err := setup(context.Background(), appsOf(a), 8, 3, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range AllPolicies {
			st := time.Now()
			r, err := simulate(dep, p, 120, 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s %s %v n=%d mean=%.0fms", a, p, time.Since(st).Round(time.Millisecond), r.m.Total.Requests, r.m.Total.Latency.MeanUs/1000)
		}
	}
}
