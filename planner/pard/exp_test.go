package pard

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	demo "github.com/plan-dev/plan/internal/demo/pard"
	"github.com/plan-dev/plan/runtime"
	"github.com/plan-dev/plan/sim"
)

func TestExp(t *testing.T) {
	if os.Getenv("PARD_EXP") == "" {
		t.Skip()
	}
	apps := strings.Split(os.Getenv("PARD_EXP"), ",")
	extra := map[string]string{}
	for _, kv := range strings.Fields(os.Getenv("PARD_PARAMS")) {
		k, v, _ := strings.Cut(kv, "=")
		extra[k] = v
	}
	for _, an := range apps {
		app, _ := demo.AppByName(an)
		w := demo.Workload(150)
		w.Pipelines = []formats.Pipeline{demo.Pipeline(app, 150)}
		pl, err := Provision(context.Background(), Inputs{Workload: w, Profiles: []formats.Profile{*demo.Profile()}, Cluster: demo.Cluster()}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range []string{"tweet", "azure"} {
			rates, _ := sim.PARDTrace(tr, 600, 150, 1)
			for _, pol := range []string{"none", "nexus", "clipper++", "pard"} {
				dep, _ := runtime.FromPARDPlan(pl)
				params := map[string]string{"autoscale": "1", "samples": "2000"}
				for k, v := range extra {
					params[k] = v
				}
				m, err := sim.RunPipeline(sim.PipelineRun{Dep: dep, Policy: runtime.Config{Policy: pol, Params: params}, Rates: rates, Seed: 1})
				if err != nil {
					t.Fatal(err)
				}
				var sh []string
				for _, s := range m.Shares {
					sh = append(sh, fmt.Sprintf("%.0f", 100*s.Share))
				}
				fmt.Printf("%s %s %-10s good=%.3f drop=%.4f inv=%.4f later=%.2f shares=%s min1=%.2f\n", an, tr, pol, m.Goodput, m.DropRate, m.InvalidRate, m.LaterShare, strings.Join(sh, "/"), m.Windows[0].MinGoodput)
			}
		}
	}
}
