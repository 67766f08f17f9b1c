package ppipe

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/demo"
)

func TestDebugDemo(t *testing.T) {
	if os.Getenv("DEMO") == "" {
		t.Skip()
	}
	p, _ := demo.Profile()
	c, _ := demo.Cluster()
	slo, _ := time.ParseDuration(os.Getenv("DEMO"))
	pl, err := Solve(context.Background(), Inputs{Profiles: []*formats.Profile{p}, Cluster: c}, Options{SLO: slo})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("status %s obj %.2f bound %.2f gap %.4f%% options %s/%s", pl.Provenance.Status, pl.Provenance.Objective, pl.Provenance.Bound, pl.Provenance.Gap*100, pl.PPipe.Extra["options_kept"], pl.PPipe.Extra["options_raw"])
}
