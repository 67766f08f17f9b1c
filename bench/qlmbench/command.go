// Package qlmbench is `plan bench qlm`: QLM's evaluation (QLM §8) replayed in the simulator
// on the Azure LLM inference trace (the conversation trace, embedded with its CC-BY 4.0
// attribution in data/NOTICE, or --trace FILE):
// arrival times and prompt/output token counts come from the trace, compressed in time to
// scale the rate; every request is latency-sensitive (20 s end-to-end SLO) with the given
// share, the rest batch (10 min). It reports SLO attainment per class and throughput for QLM,
// every baseline and the ablations side by side with the paper's directions.
package qlmbench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/plan-dev/plan/bench"
	"github.com/plan-dev/plan/dataplane"
	dq "github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/internal/base/tables"
	"github.com/plan-dev/plan/internal/onformats/benchapi"
	"github.com/plan-dev/plan/profiler/llm"
	"github.com/plan-dev/plan/sim"
)

// Command is `plan bench qlm`.
type Command struct {
	quick    bool
	report   string
	trace    string
	profile  string
	speedup  float64
	share    float64
	minutes  float64
	policies []string
	workload string
	relax    []float64
}

// Help implements benchapi.Bench.
func (o *Command) Help() benchapi.Help {
	return benchapi.Help{
		Name:  "qlm",
		Short: "QLM vs vLLM-FCFS, EDF, round-robin/random assignment and ablations on the Azure LLM trace",
		Long: `Replays the Azure LLM inference trace 2023 (conversation service; embedded in plan under
CC-BY 4.0, cite Patel et al., "Splitwise", ISCA 2024; --trace FILE for another) against two
A100 instances serving Mistral-7B (W_B, single model, QLM §8.2) from the bundled profile
(a copy of testdata/qlm/profile.json; --profile FILE for another). The output names the
data used. Arrival times are the trace's, compressed by --speedup to raise
the rate; prompt and output lengths are the trace's. A --share of requests (every k-th) is
latency-sensitive (20 s end-to-end SLO), the rest batch (10 min). Prints, per policy, SLO
attainment of each class, throughput and the wall time of the replay. Paper (Fig. 9-10):
QLM +40-90% SLO attainment over vLLM, ahead of EDF; throughput +20% over vLLM and EDF.
--quick: the first 3 minutes of virtual time. --report DIR writes bench.json.`,
		Example: "  plan bench qlm --quick\n  plan bench qlm --minutes 60 --speedup 4\n  plan bench qlm --quick --report qlm-report --trace azure-llm-2023-code.csv",
	}
}

// Flags implements benchapi.Bench.
func (o *Command) Flags(f *pflag.FlagSet) {
	f.BoolVar(&o.quick, "quick", false, "first 3 minutes of virtual time (under 2 minutes)")
	f.StringVar(&o.report, "report", "", "directory for bench.json")
	f.StringVar(&o.trace, "trace", "", "Azure LLM trace CSV (TIMESTAMP,ContextTokens,GeneratedTokens; default: the embedded conversation trace)")
	f.StringVar(&o.profile, "profile", "", "LLM profile with mistral-7b on A100 (default: the embedded copy of testdata/qlm/profile.json)")
	f.Float64Var(&o.speedup, "speedup", 4, "time compression of the trace (rate multiplier)")
	f.Float64Var(&o.share, "share", 0.2, "share of latency-sensitive requests")
	f.Float64Var(&o.minutes, "minutes", 10, "minutes of virtual time replayed")
	f.StringSliceVar(&o.policies, "policies", nil, "comma-separated policies to run, e.g. qlm,qlm-edf (default: all QLM-kind policies)")
	f.StringVar(&o.workload, "workload", "all", "set-up: single (W_B: Mistral-7B on 2 A100), multi (W_A: Mistral-7B, Vicuna-13B, Llama-70B on an A100/A10 mix) or all")
	f.Float64SliceVar(&o.relax, "relax", []float64{2, 5, 11}, "SLO scales of the relaxation experiment on the multi-model set-up (paper App. A.1; QLM, vLLM, EDF, SHEPHERD unless --policies; skipped with --workload single)")
}

type row struct {
	t       dataplane.Time
	in, out int32
}

// Load reads the trace.
func Load(path string) ([]row, error) {
	// The guarded reader of every file-taking flag.
	data, err := formats.ReadBytes(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, bytes.NewReader(data))
}

// Parse decodes an Azure LLM trace (TIMESTAMP,ContextTokens,GeneratedTokens with a header
// line), rejecting malformed lines and decreasing timestamps with the line number.
func Parse(path string, r io.Reader) ([]row, error) {
	sc := bufio.NewScanner(r)
	var rows []row
	var t0 time.Time
	line := 0
	for sc.Scan() {
		line++
		if line == 1 {
			continue
		}
		parts := strings.Split(sc.Text(), ",")
		if len(parts) != 3 {
			return nil, fmt.Errorf("%s:%d: want 3 fields, got %d", path, line, len(parts))
		}
		ts, err := time.Parse("2006-01-02 15:04:05.9999999", parts[0])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: TIMESTAMP %q: %v", path, line, parts[0], err)
		}
		in, err1 := strconv.Atoi(parts[1])
		out, err2 := strconv.Atoi(parts[2])
		if err1 != nil || err2 != nil || in < 1 || out < 1 {
			return nil, fmt.Errorf("%s:%d: token counts %q, %q: must be integers >= 1", path, line, parts[1], parts[2])
		}
		if line == 2 {
			t0 = ts
		}
		if len(rows) > 0 && ts.Sub(t0).Microseconds() < int64(rows[len(rows)-1].t) {
			return nil, fmt.Errorf("%s:%d: TIMESTAMP %q: earlier than the previous line", path, line, parts[0])
		}
		rows = append(rows, row{t: dataplane.Time(ts.Sub(t0).Microseconds()), in: int32(min(in, 8192)), out: int32(min(out, 2048))})
	}
	return rows, sc.Err()
}

// Result is one policy's outcome on one workload.
type Result struct {
	Workload string `json:"workload"`
	// SLOScale multiplies every class's SLO (the relaxation experiment, paper App. A.1).
	SLOScale    float64 `json:"slo_scale"`
	Policy      string  `json:"policy"`
	Requests    int     `json:"requests"`
	Interactive float64 `json:"interactive"` // SLO attainment
	Batch       float64 `json:"batch"`
	Overall     float64 `json:"overall"`
	// ThroughputRPS is completed requests per second of virtual time; WallSec the run's wall time.
	ThroughputRPS float64 `json:"throughput_rps"`
	WallSec       float64 `json:"wall_sec"`
	// Counters of the serving operations and the plan generator. Preemptions counts the
	// engine's preemption events (vllm:num_preemptions_total's rule, LLM engine digest part
	// 2, §1), Evictions QLM's own request evictions (QLM §6).
	Preemptions int64 `json:"preemptions"`
	Evictions   int64 `json:"evictions"`
	KVSwaps     int64 `json:"kv_swaps"`
	ModelSwaps  int64 `json:"model_swaps"`
	Replans     int64 `json:"replans"`
	Fallbacks   int64 `json:"fallbacks"`
	// Timing is what users of LLM serving read (LLM engine digest §3): TTFT, TPOT and E2E
	// percentiles and output tokens per second, over every class and per class.
	Timing  ClassTiming   `json:"timing"`
	Classes []ClassTiming `json:"classes,omitempty"`
}

// ClassTiming is one class's (or every class's) token timings in a replay.
type ClassTiming struct {
	Class string `json:"class"`
	// TTFT, TPOT (µs per output token after the first) and E2E percentiles of the answered
	// requests; TTFT and TPOT only of those whose policy stamped a first token.
	TTFT             sim.Latency `json:"ttft"`
	TPOT             sim.Latency `json:"tpot"`
	E2E              sim.Latency `json:"e2e"`
	OutputTokensPerS float64     `json:"output_tokens_per_s"`
}

func classTiming(a *sim.AppMetrics) ClassTiming {
	c := ClassTiming{Class: a.Name, E2E: a.Latency}
	if a.LLM != nil {
		c.TTFT, c.TPOT, c.OutputTokensPerS = a.LLM.TTFT, a.LLM.TPOT, a.LLM.OutputTokensPerS
	}
	return c
}

// Workload is one of the paper's set-ups (QLM §8): instances and the models requests ask
// for, in trace order round-robin over Models.
type Workload struct {
	Name      string
	Models    []string
	Instances []dq.Instance
	// Roofline: profiles come from profiler/llm's estimate (A10/A100 mixes, Llama-70B on
	// 4×A100) instead of --profile.
	Roofline bool
	// Speedup scales the trace rate relative to --speedup (heavier set-ups need more load to
	// saturate).
	Speedup float64
}

// Workloads are the paper's set-ups: W_B single model (Mistral-7B on two A100s, QLM §8) and
// W_A multi-model (Mistral-7B, Vicuna-13B and Llama-70B on an A100/A10 mix: model swaps and
// heterogeneous eligibility, Fig. 9).
var Workloads = []Workload{
	{Name: "single", Models: []string{"mistral-7b"}, Speedup: 1,
		Instances: []dq.Instance{{Name: "i0", GPU: "A100", Model: "mistral-7b"}, {Name: "i1", GPU: "A100", Model: "mistral-7b"}}},
	{Name: "multi", Models: []string{"mistral-7b", "vicuna-13b", "llama-2-70b"}, Roofline: true, Speedup: 0.5,
		Instances: []dq.Instance{{Name: "a100-0", GPU: "A100", Model: "mistral-7b"}, {Name: "a100-1", GPU: "A100", Model: "vicuna-13b"},
			{Name: "a100x4", GPU: "4xA100", GPUCount: 4, Model: "llama-2-70b"}, {Name: "a10-0", GPU: "A10", Model: "mistral-7b"}}},
}

// Run implements benchapi.Bench.
func (o *Command) Run(_ context.Context, env benchapi.Env) error {
	if o.speedup <= 0 || o.share < 0 || o.share > 1 || o.minutes <= 0 {
		return bench.Usagef("--speedup must be > 0, --share in [0, 1], --minutes > 0")
	}
	for _, r := range o.relax {
		if !(r > 0) {
			return bench.Usagef("--relax: %g: SLO scales must be > 0", r)
		}
	}
	if o.quick {
		o.minutes = 3
	}
	if err := CheckPolicies(o.policies); err != nil {
		return err
	}
	var wls []Workload
	for _, w := range Workloads {
		if o.workload == "all" || o.workload == w.Name {
			wls = append(wls, w)
		}
	}
	if len(wls) == 0 {
		return bench.Usagef("--workload %q: want single, multi or all", o.workload)
	}
	if err := bench.PrepareReport(o.report); err != nil {
		return err
	}
	rows, err := LoadTrace(o.trace)
	if err != nil {
		return bench.Usagef("--trace: %v", err)
	}
	pr, err := LoadProfile(o.profile)
	if err != nil {
		return bench.Usagef("--profile: %v", err)
	}
	traceName, profileName := dataLine(o.trace, o.profile)
	window := dataplane.Time(o.minutes*60) * dataplane.Second
	// SLO relaxation (paper App. A.1, Fig. 20): the multi-model set-up with every SLO scaled.
	relaxPols := o.policies
	if len(relaxPols) == 0 {
		relaxPols = []string{dq.PolicyQLM, dq.PolicyFCFS, dq.PolicyEDF, dq.PolicyShepherd}
	}
	relax := o.relax
	if o.workload == Workloads[0].Name {
		relax = nil // a multi-model experiment: not part of a single-model run
	}
	type step struct {
		w      Workload
		policy string
		scale  float64
	}
	var steps []step
	for _, w := range wls {
		for _, p := range policyNames(o.policies) {
			steps = append(steps, step{w, p, 1})
		}
	}
	for _, sc := range relax {
		for _, p := range relaxPols {
			steps = append(steps, step{Workloads[1], p, sc})
		}
	}
	var res []Result
	for i, st := range steps {
		env.Progressf("qlm bench: %d/%d: workload %s, SLO %gx, policy %s", i+1, len(steps), st.w.Name, st.scale, st.policy)
		r, err := ReplayWorkload(rows, st.w, pr.LLMs, o.speedup, o.share, window, []string{st.policy}, st.scale)
		if err != nil {
			return err
		}
		res = append(res, r...)
	}
	if o.report != "" {
		rep := Report{Kind: reportKind, Trace: traceName, Profile: profileName, Results: res}
		if err := bench.WriteReport(o.report, rep); err != nil {
			return err
		}
	}
	if env.JSON {
		// stdout stays the results array it always was; the data goes to the log.
		env.Infof("qlm bench: trace: %s; profile: %s", traceName, profileName)
		return env.WriteJSON(res)
	}
	fmt.Fprintf(env.Out, "trace: %s\nprofile: %s\n", traceName, profileName)
	var tab [][]string
	for _, r := range res {
		tab = append(tab, []string{r.Workload, fmt.Sprintf("%gx", r.SLOScale), r.Policy, strconv.Itoa(r.Requests), fmt.Sprintf("%.1f%%", 100*r.Overall),
			fmt.Sprintf("%.1f%%", 100*r.Interactive), fmt.Sprintf("%.1f%%", 100*r.Batch),
			fmt.Sprintf("%.2f", r.ThroughputRPS), p50p99(r.Timing.TTFT, 1e6), p50p99(r.Timing.TPOT, 1e3), p50p99(r.Timing.E2E, 1e6), fmt.Sprintf("%.0f", r.Timing.OutputTokensPerS),
			fmt.Sprintf("%.2f", r.WallSec), strconv.FormatInt(r.Preemptions, 10), fmt.Sprintf("%d/%d/%d", r.Evictions, r.KVSwaps, r.ModelSwaps), fmt.Sprintf("%d/%d", r.Replans, r.Fallbacks)})
	}
	header := []string{"WORKLOAD", "SLO", "POLICY", "REQUESTS", "SLO_ALL", "SLO_INTERACTIVE", "SLO_BATCH", "THROUGHPUT_RPS",
		"TTFT_P50/P99_S", "TPOT_P50/P99_MS", "E2E_P50/P99_S", "OUT_TOK/S", "WALL_S", "PREEMPTIONS", "EVICT/SWAP/MODEL", "REPLANS/FALLBACK"}
	env.Table(header, tab)
	noStamp := "no sample: the policy stamps no first token"
	tables.DashNote(env.Out, header, tab, map[string]string{"TTFT_P50/P99_S": noStamp, "TPOT_P50/P99_MS": noStamp, "E2E_P50/P99_S": "no request answered"})
	env.Infof("paper: QLM +40-90%% SLO attainment over vLLM and +50-90%% over SHEPHERD (W_A, W_B), above EDF; throughput +20%% over vLLM/EDF, +50%% over SHEPHERD; relaxation (W_A): EDF meets all SLOs at 3x, SHEPHERD at 5x, vLLM at 11x\n")
	return nil
}

// p50p99 renders a latency's median and p99 in units of unitUs µs ("-": no sample, a policy
// that stamps no first token).
func p50p99(l sim.Latency, unitUs float64) string {
	if l == (sim.Latency{}) {
		return "-"
	}
	return fmt.Sprintf("%.2f/%.2f", float64(l.P50Us)/unitUs, float64(l.P99Us)/unitUs)
}

// Report is bench.json of --report DIR: the data the run used and every result.
type Report struct {
	// Kind is "QLMBench", so plan validate knows the file.
	Kind    string   `json:"kind"`
	Trace   string   `json:"trace"`
	Profile string   `json:"profile"`
	Results []Result `json:"results"`
}

// policyNames is names, or every QLM-kind policy when names is empty.
func policyNames(names []string) []string {
	if len(names) > 0 {
		return names
	}
	var all []string
	for _, p := range dq.Policies() {
		all = append(all, p.Name)
	}
	return all
}

// CheckPolicies rejects a --policies list naming a policy the QLM data plane does not have
// (a usage error naming the flag, the value and the known names), before any replay runs.
func CheckPolicies(names []string) error {
	known := map[string]bool{}
	var all []string
	for _, p := range dq.Policies() {
		known[p.Name] = true
		all = append(all, p.Name)
	}
	sort.Strings(all)
	for _, n := range names {
		if !known[n] {
			return bench.Usagef("--policies %q: unknown policy %q: must be one of %s", strings.Join(names, ","), n, strings.Join(all, ", "))
		}
	}
	return nil
}

// Replay runs every policy on the trace window of the single-model set-up.
func Replay(rows []row, profs []formats.LLMProfile, speedup, share float64, window dataplane.Time, policies []string) ([]Result, error) {
	return ReplayWorkload(rows, Workloads[0], profs, speedup, share, window, policies, 1)
}

// ReplayWorkload runs every policy on the trace window of workload w with SLOs scaled by
// sloScale: every request of the trace, in order, asks for the next of w.Models; a share of
// them is latency-sensitive (20 s), the rest batch (10 min).
func ReplayWorkload(rows []row, w Workload, profs []formats.LLMProfile, speedup, share float64, window dataplane.Time, policies []string, sloScale float64) ([]Result, error) {
	if w.Roofline {
		var err error
		profs, err = rooflineProfiles(w)
		if err != nil {
			return nil, err
		}
	}
	nm := len(w.Models)
	times := make([][]dataplane.Time, 2*nm)
	attrs := make([][]dataplane.Attrs, 2*nm)
	k := 0
	every := 0
	if share > 0 {
		every = int(1/share + 0.5)
	}
	for _, r := range rows {
		t := dataplane.Time(float64(r.t) / (speedup * w.Speedup))
		if t >= window {
			break
		}
		a := dataplane.Attrs{InTokens: r.in, OutTokens: r.out}
		c := 2*(k%nm) + 1
		if every > 0 && (k/nm)%every == 0 {
			c--
		}
		times[c] = append(times[c], t)
		attrs[c] = append(attrs[c], a)
		k++
	}
	tp := llmspec.TokenProfile{Mean: 1000, Std: 800, Max: 8192}
	op := llmspec.TokenProfile{Mean: 230, Std: 200, Max: 2048}
	var classes []llmspec.LLMClass
	for _, m := range w.Models {
		classes = append(classes,
			llmspec.LLMClass{Name: m + "-interactive", Model: m, SLO: formats.Duration(time.Duration(sloScale * float64(20*time.Second))), Interactive: true, RateRPS: 1, InputTokens: tp, OutputTokens: op},
			llmspec.LLMClass{Name: m + "-batch", Model: m, SLO: formats.Duration(time.Duration(sloScale * float64(10*time.Minute))), RateRPS: 1, InputTokens: tp, OutputTokens: op})
	}
	dep, err := dq.Build(classes, dq.Setup{Profiles: profs, Instances: w.Instances})
	if err != nil {
		return nil, err
	}
	reg := dq.Registry()
	if len(policies) == 0 {
		for _, p := range dq.Policies() {
			policies = append(policies, p.Name)
		}
	}
	var out []Result
	for _, name := range policies {
		// The paper's policies admit every request (QLM §8): no admission at the door.
		p, err := reg.New(dep, dataplane.Config{Policy: name, Params: map[string]string{"admit": "all"}}, dq.PolicyQLM)
		if err != nil {
			return nil, bench.Usagef("--policies: %v", err)
		}
		start := time.Now()
		ok := make([]int, len(classes))
		n := make([]int, len(classes))
		var last dataplane.Time
		srcs := make([]sim.Source, len(classes))
		for c := range srcs {
			srcs[c] = &sim.Times{T: times[c]}
		}
		s, err := sim.New(dep, p, srcs, sim.Options{Duration: window + 1, LLM: sim.LLMClassesOf(dep, classes),
			Attrs: func(a dataplane.AppID, i int64) dataplane.Attrs { return attrs[a][i] }, CompactEvery: 1 << 16,
			OnFinish: func(now dataplane.Time, r *dataplane.Request) {
				n[r.App]++
				if r.Outcome == dataplane.Completed {
					ok[r.App]++
				}
				last = now
			}})
		if err != nil {
			return nil, fmt.Errorf("workload %s: %w", w.Name, err)
		}
		m, err := s.Run()
		if err != nil {
			return nil, fmt.Errorf("workload %s, policy %s: %w", w.Name, name, err)
		}
		st := p.(*dq.Policy).Stats()
		r := Result{Workload: w.Name, SLOScale: sloScale, Policy: name, WallSec: time.Since(start).Seconds(), Preemptions: p.(*dq.Policy).Preemptions(), Evictions: st.Evictions, KVSwaps: st.KVSwaps,
			ModelSwaps: st.ModelSwaps, Replans: st.Replans, Fallbacks: st.PlanFallbacks, Timing: classTiming(&m.Total)}
		for i := range m.Apps {
			if m.Apps[i].Requests > 0 {
				r.Classes = append(r.Classes, classTiming(&m.Apps[i]))
			}
		}
		var okI, nI, okB, nB int
		for c := range classes {
			if c%2 == 0 {
				okI, nI = okI+ok[c], nI+n[c]
			} else {
				okB, nB = okB+ok[c], nB+n[c]
			}
		}
		r.Requests = nI + nB
		if nI > 0 {
			r.Interactive = float64(okI) / float64(nI)
		}
		if nB > 0 {
			r.Batch = float64(okB) / float64(nB)
		}
		if r.Requests > 0 {
			r.Overall = float64(okI+okB) / float64(r.Requests)
		}
		if last > 0 {
			r.ThroughputRPS = float64(r.Requests) / (float64(last) / 1e6)
		}
		out = append(out, r)
	}
	return out, nil
}

// rooflineProfiles estimates every (model, instance GPU label) pair of w with profiler/llm
// (the analytic backend, iteration model included). A label "NxGPU" is a tensor-parallel
// node of N GPUs: it hosts, at degree N, the models that do not fit one such GPU but fit N
// (QLM §7 serves Llama-70B on 4 A100s, though vLLM's budget would start it on 2), a plain
// "GPU" those that fit one; other pairs get no profile, so that instance cannot host that
// model.
func rooflineProfiles(w Workload) ([]formats.LLMProfile, error) {
	seen := map[string]bool{}
	var out []formats.LLMProfile
	for _, in := range w.Instances {
		if seen[in.GPU] {
			continue
		}
		seen[in.GPU] = true
		n, base := 1, in.GPU
		if x, rest, ok := strings.Cut(in.GPU, "x"); ok {
			if v, err := strconv.Atoi(x); err == nil && v > 0 {
				n, base = v, rest
			}
		}
		for _, m := range w.Models {
			p, err := llm.Estimate(m, base)
			if err != nil || (n == 1) != (p.GPUCount == 1) || p.GPUCount > n {
				continue // does not fit, or belongs on another node
			}
			if p.GPUCount != n {
				if p, err = llm.EstimateOn(m, base, n); err != nil {
					continue
				}
			}
			p.GPU = in.GPU
			out = append(out, *p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("workload %s: no model fits any GPU", w.Name)
	}
	return out, nil
}

const reportKind = "QLMBench"

// ReportKind implements benchapi.ReportReader.
func (o *Command) ReportKind() string { return reportKind }

// ReadReport implements benchapi.ReportReader.
func (o *Command) ReadReport(name string, data []byte) ([]byte, error) {
	return bench.Reread(name, data, reportKind, func(r *Report) string { return r.Kind })
}
