package dyorc

import (
	"os"
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

func TestExplore(t *testing.T) {
	if os.Getenv("DYORC_EXPLORE") == "" {
		t.Skip()
	}
	for _, wf := range []string{"gill.json", "kc.json", "debate.json", "image.json", "workload.json"} {
		for _, sp := range Policies() {
			r := simulate(t, wf, 8, sp.Name, 1, 300*dataplane.Second, 3, true)
			s := r.stats
			t.Logf("%-14s %-17s n=%5d mean=%8.0fms p99=%8.0fms loads=%4d evict=%4d dp=%d binds=%d mis=%d states/dp=%d step=%v/%v flow=%v/%v", wf, sp.Name, r.m.Total.Requests, r.m.Total.Latency.MeanUs/1000, float64(r.m.Total.Latency.P99Us)/1000, s.Loads, s.Evictions, s.DPRuns, s.Binds, s.Mispredicts, s.StatesExpanded/max(s.DPRuns, 1), s.StepHit, s.StepTotal, s.FlowHit, s.FlowTotal)
		}
	}
}
