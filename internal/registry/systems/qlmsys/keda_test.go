package qlmsys

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	ap "github.com/plan-dev/plan/dataplane/autopilot"
	dq "github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/export"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
	"github.com/plan-dev/plan/internal/base/testmode"
	"github.com/plan-dev/plan/sim"
)

// kedaLoad is how long a replica KEDA adds takes to serve: a vLLM engine loading a 7B model
// (weights from local disk, CUDA graphs) before its first request.
const kedaLoad = 30 * dataplane.Second

// TestKEDAReplayAzure replays the KEDA ScaledObject export writes for the QLM autopilot
// plan's pool of Mistral-7B instances (export.Capacity.PoolScale: the threshold is the
// classes' predicted sustained_rps over the 16 replicas) on the Azure LLM conversation trace
// (an hour in 10 s counts, testdata/autopilot/azure-conv.json, its shape scaled so its mean
// is each class's planned rate): the ScaledObject goes through YAML and
// export.DecodeScaledObject, its rule (export.ScalerRule.Replay: KEDA's polling interval,
// the query's 1 m rate, the HPA's tolerance and 300 s scale-down window) sets the replicas
// over the trace, and the autopilot's switched replay (sim.RunSwitches) serves each span on
// the plan's first k instances, a replica added serving kedaLoad after KEDA adds it. The
// attainment must stay within 1 point of the plan's prediction at its rates where the
// trace's peaks stay within what the plan sustains, and within 1 point of the plan held at
// all its replicas where they do not. PLAN_KEDA_MINUTES shortens the trace (default: the
// whole hour).
//
// A test, not `plan simulate --scaler`: QLM's export runs each instance as a Deployment of
// its own (its pinned GPUs, its virtual queue), so no exported Deployment has replicas for a
// rate trigger to scale, and the pool's ScaledObject is built here with export's own code
// (PoolScale, ScaledObjectFor) rather than read from an export directory; the replay reuses
// the autopilot's switched simulation as it is.
func TestKEDAReplayAzure(t *testing.T) {
	if testing.Short() {
		t.Skip("replays an hour of LLM traffic")
	}
	// 80 s on 2 cores (the plan's prediction alone is 30 s): export's TestScalerReplay and
	// TestDecodeScaledObject check the replica rule and the decoder in CI.
	testmode.Heavy(t, "export's TestScalerReplay and TestDecodeScaledObject")
	root := filepath.Join("..", "..", "..", "..")
	p, err := formats.ReadInto[*formats.Plan](filepath.Join(root, "testdata", "autopilot", "qlm-plan.json"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	dep, err := dq.FromPlan(p)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	begin := time.Now()
	pred, err := sim.Predict(ctx, sim.PredictInput{Plan: p, Dep: dep, Policies: dq.Registry(), Policy: dq.PolicyQLM, Seed: 1, SpanScale: 1})
	if err != nil {
		t.Fatal(err)
	}
	p.Prediction = pred
	t.Logf("prediction (%s): %s", time.Since(begin).Round(time.Second), export.MustJSON(pred.Apps))

	// The ScaledObject, as export writes it, read back as a cluster would.
	apps := make([]string, len(dep.Apps))
	rates := make([]float64, len(dep.Apps))
	for i, a := range dep.Apps {
		apps[i], rates[i] = a.Name, a.RateRPS
	}
	n := len(qlmsec.PlanOf(p).Instances)
	sc, ok := export.CapacityOf(p).PoolScale(apps, n)
	if !ok {
		t.Fatalf("no pool scale from the prediction %+v", pred.Apps)
	}
	y, err := export.YAML(export.ScaledObjectFor("qlm-mistral-7b", sc, export.DefaultPrometheus))
	if err != nil {
		t.Fatal(err)
	}
	rule, err := export.DecodeScaledObject("scaledobject-qlm-mistral-7b.yaml", y)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ScaledObject: threshold %g rps per replica, replicas %d..%d, polling %gs, window %gs\n%s", rule.Threshold, rule.Min, rule.Max, rule.PollS, rule.WindowS, y)

	tr, err := formats.ReadInto[*formats.Trace](filepath.Join(root, "testdata", "autopilot", "azure-conv.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	counts := tr.Counts.Counts
	if m, err := strconv.Atoi(os.Getenv("PLAN_KEDA_MINUTES")); err == nil && m > 0 {
		counts = counts[:min(len(counts), m*6)]
	}
	predicted, w := 0.0, 0.0
	for _, a := range pred.Apps {
		predicted += a.Attainment * a.RateRPS
		w += a.RateRPS
	}
	predicted /= w
	for _, tc := range []struct {
		load float64
		// vsPrediction: the replay must be within 1 point of the prediction; else of the
		// plan held at its whole allocation over the same trace.
		vsPrediction bool
	}{
		// The trace at the plan's rates: its 10 s peaks reach 1.27× its mean, past conv's
		// sustained 1.25×, so no replica count within the plan's 16 meets the prediction
		// there: the scaler must cost at most 1 point against keeping all 16.
		{1, false},
		// At 0.8 of them the peaks stay within what the plan sustains.
		{0.8, true},
	} {
		t.Run(fmt.Sprintf("load %g", tc.load), func(t *testing.T) {
			keda, static, changes, meanReplicas := replayKEDA(t, p, dep, rule, counts, time.Duration(tr.Counts.Interval).Seconds(), rates, tc.load)
			t.Logf("load %g: KEDA %d changes, mean %.2f replicas of %d: attainment %.4f; all %d replicas %.4f; predicted %.4f (KEDA %+.2f points)",
				tc.load, changes, meanReplicas, n, keda, n, static, predicted, 100*(keda-predicted))
			if changes == 0 {
				t.Errorf("KEDA never scaled over the trace: the replay checks nothing the static plan does not")
			}
			ref, what := static, "the plan with all its replicas"
			if tc.vsPrediction {
				ref, what = predicted, "the plan's prediction"
			}
			if d := math.Abs(keda - ref); d > 0.01 {
				t.Errorf("attainment %.4f under KEDA, %.4f for %s: %.2f points apart, more than 1", keda, ref, what, 100*d)
			}
		})
	}
}

// replayKEDA replays the rule over counts (per stepS seconds) scaled so each class's mean
// rate is load × its planned rate, KEDA's replicas being the plan's first k instances; it
// returns the attainment under KEDA and with all the plan's replicas, the replica changes
// and the mean replicas.
func replayKEDA(t *testing.T, p *formats.Plan, dep *dataplane.Deployment, rule export.ScalerRule, counts []int64, stepS float64, rates []float64, load float64) (keda, static float64, changes int, meanReplicas float64) {
	t.Helper()
	n := len(qlmsec.PlanOf(p).Instances)
	var sum int64
	for _, c := range counts {
		sum += c
	}
	mean := float64(sum) / float64(len(counts)) / stepS
	total := make([]float64, len(counts))
	perApp := make([][]float64, len(rates))
	for a := range rates {
		perApp[a] = make([]float64, len(counts))
		for i, c := range counts {
			perApp[a][i] = load * rates[a] * float64(c) / stepS / mean
			total[i] += perApp[a][i]
		}
	}
	dur := dataplane.Time(math.Round(float64(len(counts)) * stepS * 1e6))
	arrivals := make([][]dataplane.Time, len(rates))
	for a := range rates {
		src := sim.NewPiecewise(perApp[a], dataplane.Time(stepS*1e6), 0, dur, sim.PointSeed(1, load, a))
		for at := src.Next(); at != dataplane.Never && at < dur; at = src.Next() {
			arrivals[a] = append(arrivals[a], at)
		}
	}
	steps := rule.Replay(total, stepS, n)
	sub := map[int]ap.Candidate{}
	cand := func(k int) ap.Candidate {
		if c, ok := sub[k]; ok {
			return c
		}
		q := *p
		q.Sections = maps.Clone(p.Sections) // the section set below must not reach p
		qp := *qlmsec.PlanOf(p)
		qp.Instances = qp.Instances[:k]
		qlmsec.SetPlan(&q, &qp)
		c := ap.Candidate{Digest: fmt.Sprintf("%d replicas", k), GPUs: k, Plan: &q}
		sub[k] = c
		return c
	}
	var sw []sim.PlannedSwitch
	replicaS, prev := 0.0, steps[0]
	for _, s := range steps[1:] {
		at := dataplane.Time(s.AtS * 1e6)
		from := at
		if s.Replicas > prev.Replicas {
			from += kedaLoad
		}
		sw = append(sw, sim.PlannedSwitch{Decided: at, From: from, Plan: cand(s.Replicas)})
		replicaS += float64(prev.Replicas) * (s.AtS - prev.AtS)
		prev = s
	}
	replicaS += float64(prev.Replicas) * (float64(dur)/1e6 - prev.AtS)
	run := &sim.AutopilotRun{Arrivals: arrivals, Duration: dur, Seed: 1, LLM: sim.LLMClassesOf(dep, llmspec.ClassesOf(p.Provenance.Embedded.Workload)),
		Deploy: func(c ap.Candidate) (*dataplane.Deployment, dataplane.Policy, error) {
			d, err := dq.FromPlan(c.Plan.(*formats.Plan))
			if err != nil {
				return nil, nil, err
			}
			pol, err := dq.Registry().New(d, dataplane.Config{Policy: dq.PolicyQLM}, dq.PolicyQLM)
			return d, pol, err
		}}
	res, err := sim.RunSwitches(run, cand(steps[0].Replicas), sw)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sim.RunStatic(run, cand(n))
	if err != nil {
		t.Fatal(err)
	}
	return res.Attainment, st.Attainment, len(sw), replicaS / (float64(dur) / 1e6)
}
