package pard

import (
	"context"
	"fmt"
	"testing"
	"time"

	demo "github.com/plan-dev/plan/internal/demo/pard"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/runtime"
	"github.com/plan-dev/plan/sim"
)

func TestExp(t *testing.T) {
	w := demo.Workload(150)
	w.Pipelines = w.Pipelines[3:4]
	pl, err := Provision(context.Background(), Inputs{Workload: w, Profiles: []formats.Profile{*demo.Profile()}, Cluster: demo.Cluster()}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range pl.PARD.Apps {
		for _, m := range a.Modules {
			fmt.Printf("%s %s b=%d n=%d lat=%.0f\n", a.Name, m.Name, m.Batch, m.Workers, m.LatencyUs)
		}
	}
	for ai := range pl.PARD.Apps {
		p1 := *pl
		pp := *pl.PARD
		pp.Apps = pp.Apps[ai : ai+1]
		p1.PARD = &pp
		for _, tr := range []string{"tweet", "azure"} {
			rates, err := sim.PARDTrace(tr, 600, 150, 1)
			if err != nil {
				t.Fatal(err)
			}
			for _, pol := range []string{"none", "nexus", "clipper++", "pard", "pard-back"} {
				dep, err := runtime.FromPARDPlan(&p1)
				if err != nil {
					t.Fatal(err)
				}
				st := time.Now()
				m, err := sim.RunPipeline(sim.PipelineRun{Dep: dep, Policy: runtime.Config{Policy: pol, Params: map[string]string{"autoscale": "1", "samples": "2000"}}, Rates: rates, Seed: 1})
				if err != nil {
					t.Fatal(err)
				}
				fmt.Printf("%s %s %-10s good=%.3f drop=%.4f inv=%.4f later=%.2f min1=%.2f wait=%.1f %v %v\n", pp.Apps[0].Name, tr, pol, m.Goodput, m.DropRate, m.InvalidRate, m.LaterShare, m.Windows[0].MinGoodput, m.MeanWaitMs, time.Since(st).Round(time.Millisecond), m.Reasons)
			}
		}
	}
}
