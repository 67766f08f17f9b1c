package ppipebench

import (
	"context"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
)

// TestSmallRun runs one HC, one group and one trace on the small (4 + 12) cluster with a
// coarse sweep: every strategy must produce a plan the runtime can serve.
func TestSmallRun(t *testing.T) {
	if testing.Short() {
		t.Skip("solves three MILPs")
	}
	cfg := Config{
		HCs: HCs[:1], Groups: Groups[1:2], Traces: []string{"poisson"},
		Loads: Loads(0.5, 1.0, 0.25), Duration: dataplane.Second, Seed: 1,
		TimeLimit: 20 * time.Second, MaxPartitions: 2,
		Log: t.Logf,
	}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 {
		t.Fatalf("%d rows", len(res.Rows))
	}
	for i, s := range res.Rows[0].Status {
		if s == "" || len(s) > 6 && s[:6] == "error:" {
			t.Errorf("%s: %s", Strategies[i], s)
		}
	}
	t.Logf("%+v notes %v", res.Rows[0], res.Notes)
}
