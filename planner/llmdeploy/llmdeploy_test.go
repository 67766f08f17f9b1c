package llmdeploy

import (
	"context"
	"errors"
	"fmt"
	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/planner/llmcap"
	"math"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
	"github.com/plan-dev/plan/planner"
)

var dir = filepath.Join("..", "..", "testdata", "llmdeploy")

// inputs reads the bundled example's workload and cluster (and profiles), recording their
// paths as plan solve does.
func inputs(t testing.TB, workload, cluster string, profiles ...string) planner.Inputs {
	t.Helper()
	w, err := formats.ReadInto[*formats.Workload](filepath.Join(dir, workload), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	c, err := formats.ReadInto[*formats.Cluster](filepath.Join(dir, cluster), nil)
	if err != nil {
		t.Fatal(err)
	}
	in := planner.Inputs{Workload: w, Cluster: c, Refs: []formats.InputRef{{Kind: formats.KindWorkload, Path: workload}, {Kind: formats.KindCluster, Path: cluster}}}
	for _, p := range profiles {
		pr, err := formats.ReadInto[*formats.Profile](filepath.Join(dir, p), nil)
		if err != nil {
			t.Fatal(err)
		}
		in.Profiles = append(in.Profiles, pr)
		in.Refs = append(in.Refs, formats.InputRef{Kind: formats.KindProfile, Path: p})
	}
	return in
}

// withDisaggregated makes ev the disaggregated mode's evaluator for the rest of the test,
// the memo cleared before and after, and returns the example's inputs and the small search
// space with a 450 Gb/s KV link and both modes.
func withDisaggregated(t *testing.T, ev Evaluator) (planner.Inputs, Options) {
	t.Helper()
	real := Evaluators[Disaggregated]
	Evaluators[Disaggregated] = ev
	resetMemo()
	t.Cleanup(func() {
		Evaluators[Disaggregated] = real
		resetMemo()
	})
	o := small
	o.KVLinkGBps, o.Modes = 450, []Mode{Aggregated, Disaggregated}
	return inputs(t, "workload.yaml", "cluster.yaml"), o
}

func resetMemo() {
	memo.Lock()
	memo.m = map[string]Evaluation{}
	memo.Unlock()
}

// full is the default search space on every CPU (the reduced one, small, under the race
// detector).
func full() Options {
	o := Options{Workers: runtime.GOMAXPROCS(0)}
	if raceOn {
		o = small
		o.Workers = runtime.GOMAXPROCS(0)
	}
	return o
}

// small is a reduced search space for the tests that run the search more than once
// (aggregated: TestDisaggregatedFleet adds the other mode).
var small = Options{TP: []int{1, 4, 8}, BatchedTokens: []int{2048}, MaxSeqs: []int{256}, Requests: 1000, Modes: []Mode{Aggregated}}

func TestEnumerateBadInput(t *testing.T) {
	cases := []struct {
		name              string
		workload, cluster string
		profiles          []string
		edit              func(*planner.Inputs)
		want              string
	}{
		{name: "TP beyond a server", workload: "workload.yaml", cluster: "cluster.yaml", profiles: []string{"profile-tp16.json"},
			want: "profile-tp16.json: llms[0].gpu_count: 16: tensor-parallel size 16 exceeds the 8 H100 GPUs of the cluster's largest server"},
		{name: "TP not dividing the heads", workload: "workload.yaml", cluster: "cluster.yaml", profiles: []string{"profile-tp3.json"},
			want: "profile-tp3.json: llms[0].gpu_count: 3: tensor parallel size 3: does not divide llama-3.1-8b's 32 attention heads"},
		{name: "model fits no GPU type", workload: "workload.yaml", cluster: "cluster-l40s.yaml",
			want: `workload.yaml: llm_classes[1].model: "llama-3.1-70b": fits no GPU type of the cluster (L40S) at any tensor-parallel size [1 2 4 8]`},
		{name: "percentile", workload: "workload.yaml", cluster: "cluster.yaml", edit: func(in *planner.Inputs) { llmspec.ClassesOf(in.Workload)[0].TPOTPercentile = "p42" },
			want: `workload.yaml: llm_classes[0].tpot_percentile: "p42": must be p50, p90, p95 or p99`},
		{name: "prompt past the context", workload: "workload.yaml", cluster: "cluster.yaml", edit: func(in *planner.Inputs) { llmspec.ClassesOf(in.Workload)[0].InputTokens.Max = 100000000 },
			want: `workload.yaml: llm_classes[0].input_tokens.max: 100000000: with output_tokens.max`},
		{name: "mean past the context", workload: "workload.yaml", cluster: "cluster.yaml", edit: func(in *planner.Inputs) { llmspec.ClassesOf(in.Workload)[0].OutputTokens.Mean = 1.5e6 },
			want: `workload.yaml: llm_classes[0].input_tokens.mean:`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := inputs(t, tc.workload, tc.cluster, tc.profiles...)
			if tc.edit != nil {
				tc.edit(&in)
			}
			_, err := Enumerate(in, Options{})
			var ie *planner.InputError
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if !asInputError(err, &ie) {
				t.Errorf("%v is not bad input (exit 2)", err)
			}
		})
	}
}

func asInputError(err error, ie **planner.InputError) bool {
	e, ok := err.(*planner.InputError)
	*ie = e
	return ok
}

// TestEnumerate: the example's candidates are the roofline estimates at every TP that holds
// the model on one server, each at every engine setting, labelled estimated.
func TestEnumerate(t *testing.T) {
	in := inputs(t, "workload.yaml", "cluster.yaml")
	cands, err := Enumerate(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]int{}
	for _, c := range cands {
		r := c.Roles[0]
		if !r.Estimated || r.Profile.Backend != "roofline" || r.Profile.GPUCount != r.TP {
			t.Errorf("%s: estimated %v backend %s gpu_count %d", c.Label(), r.Estimated, r.Profile.Backend, r.Profile.GPUCount)
		}
		if e := r.Profile.Engine; e.MaxNumBatchedTokens != r.Engine.MaxBatchedTokens || e.MaxNumSeqs != r.Engine.MaxSeqs {
			t.Errorf("%s: profile engine %+v", c.Label(), e)
		}
		k := c.Model + "@" + r.GPU
		if n := len(got[k]); n == 0 || got[k][n-1] != r.TP {
			got[k] = append(got[k], r.TP)
		}
	}
	// L40S VMs hold one GPU: TP 1 only, where the 70B's weights do not fit; the 70B needs 2
	// H100s (141 GB of weights, 27k KV tokens left in vLLM's budget).
	want := map[string][]int{"llama-3.1-8b@H100": {1, 2, 4, 8}, "llama-3.1-8b@L40S": {1}, "llama-3.1-70b@H100": {2, 4, 8}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("candidates %v, want %v", got, want)
	}
	if len(cands) != 8*6 {
		t.Errorf("%d candidates, want 8 (model, GPU, TP) × 6 engine settings", len(cands))
	}
}

// TestEnumerateMoE: a mixture-of-experts model is tried with its experts split and, where
// the experts divide over the GPUs, placed whole (expert parallelism); with fp8 among the
// quantizations, also with online-FP8 weights on the GPUs that run them — each its own
// profile (step times, weights, engine flags) and candidate key. A quantization the
// engine cannot apply online is bad input.
func TestEnumerateMoE(t *testing.T) {
	in := inputs(t, "workload-moe.yaml", "cluster.yaml")
	cands, err := Enumerate(in, Options{Quantizations: []string{"fp8"}})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	variants := map[string]bool{}
	for _, c := range cands {
		if seen[c.Key()] {
			t.Errorf("%s: key %q twice", c.Label(), c.Key())
		}
		seen[c.Key()] = true
		r := c.Roles[0]
		e := r.Profile.Engine
		if e.EnableExpertParallel != r.Engine.ExpertParallel || e.Quantization != r.Engine.Quantization {
			t.Errorf("%s: profile engine %+v, role %+v", c.Label(), e, r.Engine)
		}
		if r.Engine.Quantization == "fp8" && r.Profile.WeightDType != "fp8" {
			t.Errorf("%s: weight_dtype %q", c.Label(), r.Profile.WeightDType)
		}
		if c.Mode == Aggregated {
			variants[fmt.Sprintf("%s×%d%s", r.GPU, r.TP, r.Engine.variant())] = true
		}
	}
	for _, v := range []string{"H100×2", "H100×2 ep", "H100×2 fp8", "H100×2 fp8 ep", "H100×8 ep", "H100×1 fp8"} {
		if !variants[v] {
			t.Errorf("no %s candidate among %v", v, variants)
		}
	}
	if variants["H100×1 ep"] || variants["H100×1"] {
		t.Error("Mixtral's 93 GB in BF16 on one H100, or expert parallelism over one GPU")
	}
	_, err = Search(context.Background(), in, Options{Quantizations: []string{"nvfp4"}})
	var ie *planner.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), `--search-quantization: "nvfp4": must be fp8`) {
		t.Errorf("nvfp4: %v", err)
	}
}

// verdict is a stand-in probe's prediction for classes[0]: one request that met every SLO
// or missed them, counted as the simulator counts it, for the capacity judge to read.
func verdict(classes []llmspec.LLMClass, met bool) []ClassPrediction {
	cl := classes[0]
	m := workload.AppMetrics{Requests: 1, LLM: &workload.LLMMetrics{Answered: 1}}
	if !met {
		m.LLM.E2EMissed = 1
	}
	return []ClassPrediction{{Class: cl.Name, Requests: 1, Checks: llmcap.Checks(&cl, &m), Metrics: m}}
}

// threshold is an evaluator that meets the SLOs below a rate.
type threshold float64

func (th threshold) Probe(_ Candidate, classes []llmspec.LLMClass, rate float64, _ Options) ([]ClassPrediction, error) {
	return verdict(classes, rate <= float64(th)), nil
}

func TestCapacityBisection(t *testing.T) {
	cls := []llmspec.LLMClass{{Name: "a", RateRPS: 1}}
	for _, th := range []float64{0.01, 0.7, 1, 7.3, 300} {
		e, err := Capacity(threshold(th), Candidate{}, cls, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if e.Rate > th || e.Rate < th/(1+llmcap.Precision)-1e-4 {
			t.Errorf("threshold %g: capacity %g, want within %.0f%% below it", th, e.Rate, 100*llmcap.Precision)
		}
	}
	if e, _ := Capacity(threshold(0), Candidate{}, cls, Options{}); e.Rate != 0 {
		t.Errorf("nothing meets: capacity %g, want 0", e.Rate)
	}
}

// TestSearchWorkersDeterministic: the same search on 1 and 4 workers gives the same rows and
// fleet (each candidate's capacity lands in its own slot whatever order workers finish in).
func TestSearchWorkersDeterministic(t *testing.T) {
	in := inputs(t, "workload.yaml", "cluster.yaml")
	var got []*Result
	for _, w := range []int{1, 4} {
		resetMemo()
		o := small
		o.Workers = w
		// Progress counts every candidate once, up to the total, in order.
		last, calls := 0, 0
		o.Progress = func(done, total int) {
			calls++
			if done != last+1 || done > total {
				t.Errorf("progress %d/%d after %d", done, total, last)
			}
			last = done
		}
		res, err := Search(context.Background(), in, o)
		if err != nil {
			t.Fatal(err)
		}
		if calls == 0 || calls != last {
			t.Errorf("%d workers: progress called %d times, last %d", w, calls, last)
		}
		got = append(got, res)
	}
	a, b := got[0], got[1]
	if len(a.Rows) != len(b.Rows) {
		t.Fatalf("%d rows vs %d", len(a.Rows), len(b.Rows))
	}
	for i := range a.Rows {
		if a.Rows[i].Candidate.Label() != b.Rows[i].Candidate.Label() || !reflect.DeepEqual(a.Rows[i].Eval, b.Rows[i].Eval) {
			t.Errorf("row %d: %s %+v vs %s %+v", i, a.Rows[i].Candidate.Label(), a.Rows[i].Eval.Rate, b.Rows[i].Candidate.Label(), b.Rows[i].Eval.Rate)
		}
	}
	if !reflect.DeepEqual(a.Chosen.Units, b.Chosen.Units) || a.Chosen.Cost != b.Chosen.Cost {
		t.Errorf("fleets differ: %v %g vs %v %g", a.Chosen.Units, a.Chosen.Cost, b.Chosen.Units, b.Chosen.Cost)
	}
}

// TestSearchNoDearerThanComparisons: on the bundled example the search's fleet costs no more
// than aggregated-only at each single TP and each single GPU type (each reported), and at
// least one comparison has a fleet.
func TestSearchNoDearerThanComparisons(t *testing.T) {
	res, err := Search(context.Background(), inputs(t, "workload.yaml", "cluster.yaml"), full())
	if err != nil {
		t.Fatal(err)
	}
	feasible := 0
	names := map[string]bool{}
	for _, f := range res.Compare {
		names[f.Name] = true
		if f.Err != nil {
			continue
		}
		feasible++
		if res.Chosen.Cost > f.Cost+1e-9 {
			t.Errorf("search %.4g $/h > %s %.4g $/h", res.Chosen.Cost, f.Name, f.Cost)
		}
	}
	for _, n := range []string{"aggregated TP1 only", "aggregated TP4 only", "aggregated TP8 only", "H100 only", "L40S only"} {
		if !names[n] {
			t.Errorf("no comparison row %q", n)
		}
	}
	if feasible == 0 {
		t.Error("no comparison fleet to compare with")
	}
	// The chosen fleet fits the cluster: GPUs per type within available.
	used := map[string]int{}
	for i, n := range res.Chosen.Units {
		for g, k := range res.Rows[i].Candidate.GPUs() {
			used[g] += n * k
		}
	}
	for g, n := range used {
		if a := inputs(t, "workload.yaml", "cluster.yaml").Cluster.AvailableOf(g); n > a {
			t.Errorf("%d %s GPUs > %d available", n, g, a)
		}
	}
}

// TestSearchHoldsInLongerRun: every chosen instance, at its share of its model's rate (units
// split the rate by capacity), holds every class's SLO percentiles over 10× the probe's
// requests drawn with another seed.
func TestSearchHoldsInLongerRun(t *testing.T) {
	in := inputs(t, "workload.yaml", "cluster.yaml")
	o := full().withDefaults()
	res, err := Search(context.Background(), in, o)
	if err != nil {
		t.Fatal(err)
	}
	capOf := map[string]float64{}
	for i, n := range res.Chosen.Units {
		capOf[res.Rows[i].Candidate.Model] += float64(n) * res.Rows[i].Eval.Rate
	}
	for _, i := range res.Chosen.Chosen() {
		r := res.Rows[i]
		m := r.Candidate.Model
		rate := res.Rates[m] * r.Eval.Rate / capOf[m]
		long := o
		long.Requests, long.Seed, long.KVLinkGBps = 10*o.Requests, 7, *in.Cluster.KVLinkGBps
		ps, err := Evaluators[r.Candidate.Mode].Probe(r.Candidate, classesOf(in.Workload, m), rate, long)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if !p.Met() {
				t.Errorf("%s at %.3g req/s: class %s misses: %+v", r.Candidate.Label(), rate, p.Class, p.Checks)
			}
		}
	}
}

// BenchmarkDeploySearch: 2 models × 3 GPU types × TP {1, 2, 4, 8} × the default engine
// settings, aggregated, on every CPU (each iteration starts with an empty memo).
func BenchmarkDeploySearch(b *testing.B) {
	in := inputs(b, "workload.yaml", "cluster-bench.yaml")
	for b.Loop() {
		resetMemo()
		cpu0 := cpuSeconds()
		res, err := Search(context.Background(), in, Options{Workers: runtime.GOMAXPROCS(0)})
		if err != nil {
			b.Fatal(err)
		}
		// CPU seconds: the one-core time on a machine others share (wall time is not).
		b.ReportMetric(cpuSeconds()-cpu0, "cpu-s")
		b.ReportMetric(float64(len(res.Rows)), "candidates")
	}
}

// perGPU is a stand-in disaggregated evaluator: a unit meets the SLOs up to rate per GPU it
// holds (the real one replays prefill and decode instances over the KV link).
type perGPU float64

func (p perGPU) Probe(c Candidate, classes []llmspec.LLMClass, rate float64, _ Options) ([]ClassPrediction, error) {
	n := 0
	for _, g := range c.GPUs() {
		n += g
	}
	return verdict(classes, rate <= float64(p)*float64(n)), nil
}

// TestDisaggregatedFleet: with a KV link the search enumerates prefill/decode pairs on one
// GPU type, and across two types at one TP, at every ratio that fits each type's GPUs, sizes
// them (pairs across types outside the MILP, off the available counts), keeps them
// out of the aggregated-only comparisons, and writes a chosen disaggregated unit as prefill
// and decode instances (its sizing checked here with a stand-in evaluator).
func TestDisaggregatedFleet(t *testing.T) {
	in, o := withDisaggregated(t, perGPU(100))
	cands, err := Enumerate(in, o)
	if err != nil {
		t.Fatal(err)
	}
	n, cross := 0, 0
	for _, c := range cands {
		if c.Mode != Disaggregated {
			continue
		}
		n++
		p, d := c.Roles[0], c.Roles[1]
		if p.Role != RolePrefill || d.Role != RoleDecode || (p.GPU != d.GPU && p.TP != d.TP) {
			t.Errorf("%s: roles %s/%s on %s/%s (two types pair at one TP)", c.Label(), p.Role, d.Role, p.GPU, d.GPU)
		}
		if p.GPU != d.GPU {
			cross++
		}
		want := map[string]int{p.GPU: c.Ratio[0] * p.TP}
		want[d.GPU] += c.Ratio[1] * d.TP
		for g, k := range c.GPUs() {
			if k != want[g] || k > in.Cluster.AvailableOf(g) {
				t.Errorf("%s: %d %s GPUs, want %d within %d", c.Label(), k, g, want[g], in.Cluster.AvailableOf(g))
			}
		}
	}
	if n == 0 || cross == 0 {
		t.Fatalf("%d disaggregated candidates, %d across GPU types", n, cross)
	}
	res, err := Search(context.Background(), in, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Compare {
		for i := range f.Units {
			if strings.HasPrefix(f.Name, "aggregated") && res.Rows[i].Candidate.Mode != Aggregated {
				t.Errorf("%s uses %s", f.Name, res.Rows[i].Candidate.Label())
			}
		}
	}
	disagg := false
	for i := range res.Chosen.Units {
		disagg = disagg || res.Rows[i].Candidate.Mode == Disaggregated
	}
	if !disagg {
		t.Fatalf("at 100 req/s per GPU a disaggregated unit is cheapest; chose %v", res.Chosen.Units)
	}
	p, err := res.Plan(in, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Every instance of a disaggregated model has a role, one kind (GPU, TP) per role, as
	// many as the units × the ratio.
	want := map[string]int{}
	for i, n := range res.Chosen.Units {
		c := res.Rows[i].Candidate
		for k, x := range c.Roles {
			want[c.Model+"|"+x.Role+"|"+x.GPU+"|"+strconv.Itoa(x.TP)] += n * c.instances(k)
		}
	}
	got := map[string]int{}
	for _, x := range qlmsec.PlanOf(p).Instances {
		got[x.Model+"|"+x.Role+"|"+x.GPU+"|"+strconv.Itoa(x.GPUCount)]++
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("instances %v, want %v", got, want)
	}
	for _, g := range qlmsec.PlanOf(p).Groups {
		for _, x := range qlmsec.PlanOf(p).Instances {
			if slices.Contains(x.Queue, g.ID) && x.Role == RoleDecode {
				t.Errorf("group %s queued on decode instance %s", g.ID, x.Name)
			}
		}
	}
}

// TestPrefixCaching: a class sharing a prompt prefix gets candidates with prefix caching on
// (their flags say so), and the cached prefix raises the capacity over the same engine
// with caching off.
func TestPrefixCaching(t *testing.T) {
	in := inputs(t, "workload.yaml", "cluster.yaml")
	llmspec.SetClasses(in.Workload, llmspec.ClassesOf(in.Workload)[1:]) // the RAG class alone
	llmspec.ClassesOf(in.Workload)[0].PrefixTokens = 2000
	o := Options{TP: []int{8}, BatchedTokens: []int{2048}, MaxSeqs: []int{256}, Requests: 1000}
	cands, err := Enumerate(in, o)
	if err != nil {
		t.Fatal(err)
	}
	var on Candidate
	for _, c := range cands {
		if c.Roles[0].GPU == "H100" {
			on = c
		}
	}
	if !on.Roles[0].Engine.PrefixCaching || !on.Roles[0].Profile.Engine.PrefixCaching() || !strings.Contains(on.Roles[0].flags(), "--enable-prefix-caching") {
		t.Fatalf("%s: prefix caching off", on.Label())
	}
	off := on
	off.Roles = []Role{on.Roles[0]}
	off.Roles[0].Engine.PrefixCaching = false
	off.Roles[0].Profile = withEngine(on.Roles[0].Profile, off.Roles[0].Engine)
	cls := llmspec.ClassesOf(in.Workload)
	a, err := Capacity(AggregatedEvaluator{}, on, cls, o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Capacity(AggregatedEvaluator{}, off, cls, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("capacity with caching %g req/s, without %g", a.Rate, b.Rate)
	if a.Rate <= b.Rate*1.1 {
		t.Errorf("capacity with a cached 2000-token prefix %g req/s, without %g: want more than 10%% higher", a.Rate, b.Rate)
	}
}

// cpuSeconds is the process's user and system CPU time so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// TestPlanGPUsOnSizedCluster: instances' GPUs are numbered on the plan's cluster (sized to the
// fleet, pools in the given order), of their type and on one server, however the pools are
// ordered and whatever the count was before sizing.
func TestPlanGPUsOnSizedCluster(t *testing.T) {
	for _, name := range []string{"as given", "L40S first, servers of 4"} {
		t.Run(name, func(t *testing.T) {
			in := inputs(t, "workload.yaml", "cluster.yaml")
			if name != "as given" {
				g := in.Cluster.GPUs
				g[0].PerServer, g[0].Count = 4, 4
				in.Cluster.GPUs = []formats.GPUPool{g[1], g[0]}
			}
			res, err := Search(context.Background(), in, small)
			if err != nil {
				t.Fatal(err)
			}
			p, err := res.Plan(in, PlanOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var typeOf []string
			server := map[int]int{}
			for _, g := range p.Cluster.GPUs {
				for k := range g.Count {
					server[len(typeOf)] = k / max(g.PerServer, 1)
					typeOf = append(typeOf, g.Type)
				}
			}
			taken := map[int]bool{}
			for _, x := range qlmsec.PlanOf(p).Instances {
				if len(x.GPUs) != x.GPUCount {
					t.Errorf("%s: %d GPUs for gpu_count %d", x.Name, len(x.GPUs), x.GPUCount)
				}
				for _, g := range x.GPUs {
					if g >= len(typeOf) || typeOf[g] != x.GPU || server[g] != server[x.GPUs[0]] || taken[g] {
						t.Errorf("%s (%s×%d): GPU %d of %v", x.Name, x.GPU, x.GPUCount, g, typeOf)
					}
					taken[g] = true
				}
			}
		})
	}
}

// acrossTypes is a stand-in disaggregated evaluator under which only pairs across two GPU
// types serve (rate per GPU of the pair); pairs on one type serve nothing.
type acrossTypes float64

func (p acrossTypes) Probe(c Candidate, classes []llmspec.LLMClass, rate float64, _ Options) ([]ClassPrediction, error) {
	n := 0
	for _, g := range c.GPUs() {
		n += g
	}
	ok := len(c.GPUs()) == 2 && rate <= float64(p)*float64(n)
	return verdict(classes, ok), nil
}

// TestAcrossTypesFleet: a prefill/decode pair across two GPU types (sized outside the MILP:
// its model's rate over its capacity, off each type's available GPUs) serves its model
// beside the other model's MILP-sized kinds; the fleet's cost is both parts', and the plan's
// instances are the pair's on their own types.
func TestAcrossTypesFleet(t *testing.T) {
	in, o := withDisaggregated(t, acrossTypes(1000))
	res, err := Search(context.Background(), in, o)
	if err != nil {
		t.Fatal(err)
	}
	// The 8B on pairs across types only (one H100 aggregated is cheaper than any pair), the
	// 70B on whatever serves it.
	res.Chosen = res.solve(context.Background(), in.Cluster, "pairs", func(r Row) bool {
		return r.Candidate.Model != "llama-3.1-8b" || len(r.Candidate.GPUs()) == 2
	})
	if res.Chosen.Err != nil {
		t.Fatal(res.Chosen.Err)
	}
	pair := -1
	sum := 0.0
	for i, n := range res.Chosen.Units {
		sum += float64(n) * res.Rows[i].UnitPrice
		if len(res.Rows[i].Candidate.GPUs()) == 2 {
			pair = i
		}
	}
	if pair < 0 {
		t.Fatalf("no pair across types chosen for the 8B: %v", res.Chosen.Units)
	}
	if c := res.Rows[pair].Candidate; c.Model != "llama-3.1-8b" || res.Chosen.Units[pair] != int(math.Ceil(res.Rates[c.Model]/res.Rows[pair].Eval.Rate-1e-9)) {
		t.Errorf("%s: %d units for %g req/s at %g per unit", c.Label(), res.Chosen.Units[pair], res.Rates[c.Model], res.Rows[pair].Eval.Rate)
	}
	if math.Abs(res.Chosen.Cost-sum) > 1e-6 {
		t.Errorf("fleet cost %g, want its units' %g", res.Chosen.Cost, sum)
	}
	p, err := res.Plan(in, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]string{}
	for _, x := range qlmsec.PlanOf(p).Instances {
		if x.Model == "llama-3.1-8b" {
			roles[x.Role] = x.GPU
		}
	}
	if roles[RolePrefill] == "" || roles[RoleDecode] == "" || roles[RolePrefill] == roles[RoleDecode] || roles[""] != "" {
		t.Errorf("the 8B's instances by role %v: want prefill and decode on two types", roles)
	}
}
