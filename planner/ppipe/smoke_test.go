package ppipe

import (
	"context"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
)

func TestSmoke(t *testing.T) {
	gpus := []gpuSpec{specL4, specP4}
	in := Inputs{Profiles: []*formats.Profile{genProfile(1, 1, 10, gpus, 0)}, Cluster: genCluster(gpus, []int{4, 12}, 30)}
	for _, s := range []string{"ppipe"} {
		for _, P := range []int{2} {
			start := time.Now()
			pl, err := Solve(context.Background(), in, Options{Strategy: s, MaxPartitions: P, Deterministic: true})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := formats.Marshal(pl.PPipe)
			t.Logf("%s P=%d %v status %s obj %.1f bound %.1f gap %.4f nodes %d extra %v\n%s", s, P, time.Since(start), pl.Provenance.Status, pl.Provenance.Objective, pl.Provenance.Bound, pl.Provenance.Gap, pl.Provenance.Nodes, pl.PPipe.Extra, b[:min(len(b), 1500)])
			if v := Verify(pl); len(v) > 0 {
				t.Errorf("violations: %v", v)
			}
		}
	}
}
