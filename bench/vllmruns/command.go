// Package vllmruns is `plan bench vllm-runs`: plan's LLM predictions checked against real
// vLLM serving runs. Each run is replayed as it was driven — the analytic profile of its
// deployment (`plan profile --llm`), its engine settings and the KV capacity vLLM
// allocated, its shared-prefix workload at constant arrivals stage by stage — through one
// engine (`plan simulate --llm`), and every stage's predicted E2E, TTFT and ITL are printed
// beside the measured ones with their signed errors and the medians over the runs. The
// bundled runs (testdata/runs.csv, cited in testdata/NOTICE.md) are the validation set; a
// recorded baseline of the medians (testdata/baseline.json) is what CI holds them to.
package vllmruns

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/plan-dev/plan/bench"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/base/quantile"
	"github.com/plan-dev/plan/internal/onformats/benchapi"
	"github.com/plan-dev/plan/profiler/llm"
)

// Command is `plan bench vllm-runs`.
type Command struct {
	// Replay is the one-engine replay the CLI hands down (internal/run/replay.Records).
	Replay Replayer

	runs     string
	baseline string
	seed     uint64
	only     []string
	quick    bool
	report   string
	single   string
	users    int
}

// reportKind is bench.json's kind.
const reportKind = "VLLMRunsBench"

// ReportKind implements benchapi.ReportReader.
func (o *Command) ReportKind() string { return reportKind }

// ReadReport implements benchapi.ReportReader.
func (o *Command) ReadReport(name string, data []byte) ([]byte, error) {
	return bench.Reread(name, data, reportKind, func(r *Report) string { return r.Kind })
}

// quickStageS is --quick's cut: each stage replayed for its first five minutes (the rates
// are constant within a stage, so its means are still the stage's, noisier).
const quickStageS = 300

// Help implements benchapi.Bench.
func (o *Command) Help() benchapi.Help {
	return benchapi.Help{
		Name:  "vllm-runs",
		Short: "Check LLM predictions against real vLLM runs: predicted vs measured E2E, TTFT, ITL",
		Long: `Replays each real vLLM run as it was driven and prints, per run and stage, the predicted
and measured E2E, TTFT and ITL (mean, p90, p99) with signed errors, and the medians over the
runs. Nothing of a run's measurement goes into its prediction: the profile is the analytic
one (plan profile --llm MODEL --gpu GPU --tp N, FP8 for an FP8 checkpoint), the engine
block is the run's settings (max_num_seqs, max_num_batched_tokens, gpu_memory_utilization,
block 16, chunked prefill and prefix caching on, max_model_len 4096), the KV capacity is
the GPU blocks vLLM allocated (plan's own estimate under the same settings is shown beside
it), and a run that offloaded KV to CPU memory replays with that tier. The workload is
inference-perf's shared_prefix: each request one of the run's system prompts plus a
question, prompts 30 tokens longer for the chat template, exactly the output tokens, at
constant intervals stage by stage. inference-perf draws its prompts once, system prompts ×
num_users_per_system_prompt of them, and cycles through them, so a repeat finds its whole
prompt in vLLM's prefix cache: a run that gives users_per_system_prompt (or every run, with
--users-per-system-prompt M) replays that list (shuffled with --seed); otherwise each
question is fresh and the system prompt is chosen uniformly (--seed).

Measured ITL is (E2E mean - TTFT mean) / (output tokens - 1), recomputed from the means
with the tokens the engine generated (the study's own column divides by a re-tokenized
count). Client overhead (HTTP, tokenization, streaming) is inside the measured TTFT and
E2E and not in the prediction.

--runs FILE replays other runs with the same columns (the bundled file's README in
testdata/). Beside the runs, each deployment of --single-stream FILE (default: the bundled
12, H100 at TP 1-8 and L40S, measured by the runs' campaign) replays one request alone,
its prompt then its output tokens, and its predicted decode time per token is printed
beside the measured one: batches of one, where the weights' reads, the per-layer kernels
and the per-step overhead are all a step holds. --baseline FILE fails (exit 1) when a median absolute error is worse than the
recorded one by more than its tolerance.`,
		Example: `  plan bench vllm-runs
  plan bench vllm-runs -O json > runs.json
  plan bench vllm-runs --baseline bench/vllmruns/testdata/baseline.json
  plan bench vllm-runs --runs my-runs.csv --run 64,65`,
	}
}

// Flags implements benchapi.Bench.
func (o *Command) Flags(fs *pflag.FlagSet) {
	fs.StringVar(&o.runs, "runs", "", "a runs CSV (the bundled validation set's columns); default: the bundled 13 H100 runs")
	fs.StringVar(&o.baseline, "baseline", "", "a baseline JSON of median absolute errors: exit 1 when a median is worse by more than its tolerance")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of each request's system prompt")
	fs.StringSliceVar(&o.only, "run", nil, "replay only these run ids (comma-separated)")
	fs.BoolVar(&o.quick, "quick", false, "replay each stage's first 5 minutes only (scored against the whole stage's measurement)")
	fs.StringVar(&o.report, "report", "", "write the report, JSON, to DIR/bench.json, and what each run replays to DIR/run-ID/profile.json and trace.json (for plan simulate --llm)")
	fs.IntVar(&o.users, "users-per-system-prompt", 0, "inference-perf's num_users_per_system_prompt for runs whose file does not give it: the requests cycle through that many prompts per system prompt (0: every question fresh)")
	fs.StringVar(&o.single, "single-stream", "", `a single-stream CSV (decode ms per token of one request at a time); default: the bundled 12 H100 and L40S deployments; "off": none`)
}

// Report is the bench's output: every run's result and the medians over the runs.
type Report struct {
	Kind    string   `json:"kind"`
	Runs    []Result `json:"runs"`
	Medians Medians  `json:"medians"`
	// Groups are the medians within each group of runs (GroupOf), in GroupOrder.
	Groups []GroupMedians `json:"groups"`
	// Baseline is the check against --baseline, when given.
	Baseline *BaselineCheck `json:"baseline,omitempty"`
	// Quick: each stage was replayed for its first quickStageS seconds only.
	Quick bool `json:"quick,omitempty"`
	// SingleStream is each single-stream deployment's decode time per token, predicted
	// beside measured, and SingleStreamMedian the median absolute error over them.
	SingleStream       []SingleStreamResult `json:"single_stream,omitempty"`
	SingleStreamMedian float64              `json:"single_stream_median_abs_error_pct,omitempty"`
}

// Run implements benchapi.Bench.
func (o *Command) Run(ctx context.Context, env benchapi.Env) error {
	if o.Replay == nil {
		return fmt.Errorf("bench vllm-runs: no replay (a bug: the CLI hands one down)")
	}
	if o.users < 0 || o.users > 1<<16 {
		return bench.Usage(fmt.Errorf("--users-per-system-prompt: %d: must be in [0, %d]", o.users, 1<<16))
	}
	name, data := EmbeddedRuns()
	if o.runs != "" {
		var err error
		if data, err = formats.ReadBytesLimit(o.runs, maxRunsBytes); err != nil {
			return bench.Usage(err)
		}
		name = o.runs
	}
	runs, err := ReadRuns(name, data)
	if err != nil {
		return bench.Usage(err)
	}
	if runs, err = selectRuns(runs, o.only); err != nil {
		return err
	}
	if err := bench.PrepareReport(o.report); err != nil {
		return err
	}
	for i := range runs {
		if runs[i].UsersPerSystemPrompt == 0 {
			runs[i].UsersPerSystemPrompt = o.users
		}
	}
	if o.quick {
		for i := range runs {
			for k := range runs[i].Stages {
				runs[i].Stages[k].DurationS = min(runs[i].Stages[k].DurationS, quickStageS)
			}
		}
	}
	var single []SingleStream
	if o.single != "off" {
		sname, sdata := EmbeddedSingleStream()
		if o.single != "" {
			if sdata, err = formats.ReadBytesLimit(o.single, maxRunsBytes); err != nil {
				return bench.Usage(err)
			}
			sname = o.single
		}
		if single, err = ReadSingleStream(sname, sdata); err != nil {
			return bench.Usage(err)
		}
	}
	var base *Baseline
	if o.baseline != "" {
		if base, err = ReadBaseline(o.baseline); err != nil {
			return bench.Usage(err)
		}
	}
	results, err := ReplayAll(ctx, runs, o.Replay, o.seed, nil, func(done, total int) { env.Progressf("%d/%d runs", done, total) })
	if err != nil {
		return err
	}
	rep := Report{Kind: reportKind, Runs: results, Medians: MediansOf(results), Groups: GroupMediansOf(results), Quick: o.quick}
	for _, s := range single {
		r, err := ReplaySingleStream(ctx, s, o.Replay)
		if err != nil {
			return err
		}
		rep.SingleStream = append(rep.SingleStream, r)
	}
	if len(rep.SingleStream) > 0 {
		rep.SingleStreamMedian = SingleStreamMedian(rep.SingleStream)
	}
	if base != nil {
		c := base.Check(rep.Medians)
		if len(rep.SingleStream) > 0 && o.single == "" {
			// The baseline's single-stream figure is the bundled file's.
			c.Regressions = append(c.Regressions, base.CheckSingleStream(rep.SingleStreamMedian)...)
		}
		rep.Baseline = &c
	}
	if o.report != "" {
		if err := bench.WriteReport(o.report, rep); err != nil {
			return err
		}
		if err := WriteInputs(o.report, runs, o.seed); err != nil {
			return err
		}
	}
	if env.JSON {
		if err := env.WriteJSON(rep); err != nil {
			return err
		}
	} else {
		printReport(env, rep)
	}
	if rep.Baseline != nil && len(rep.Baseline.Regressions) > 0 {
		return fmt.Errorf("bench vllm-runs: worse than the baseline %s: %s", o.baseline, strings.Join(rep.Baseline.Regressions, "; "))
	}
	return nil
}

// selectRuns keeps the runs --run names, in the file's order; an id the file lacks is bad
// input.
func selectRuns(runs []Run, only []string) ([]Run, error) {
	if len(only) == 0 {
		return runs, nil
	}
	var out []Run
	for _, id := range only {
		i := slices.IndexFunc(runs, func(r Run) bool { return r.ID == strings.TrimSpace(id) })
		if i < 0 {
			ids := make([]string, len(runs))
			for k, r := range runs {
				ids[k] = r.ID
			}
			return nil, bench.Usagef("--run %s: no such run (the file holds %s)", id, strings.Join(ids, ", "))
		}
		out = append(out, runs[i])
	}
	return out, nil
}

// ReplayAll replays every run, one after the other (each takes about half a CPU-second:
// the whole set runs in seconds on one core), and returns the results in the runs' order. A
// cancelled context stops it between runs.
func ReplayAll(ctx context.Context, runs []Run, replay Replayer, seed uint64, corr *llm.Corrections, progress func(done, total int)) ([]Result, error) {
	out := make([]Result, len(runs))
	for i := range runs {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("bench vllm-runs: interrupted after %d of %d runs: %w", i, len(runs), err)
		}
		var err error
		if out[i], err = Replay(ctx, runs[i], replay, seed, corr); err != nil {
			return nil, err
		}
		if progress != nil {
			progress(i+1, len(runs))
		}
	}
	return out, nil
}

// Medians are the medians over the runs (their stage=all rows) of each figure's absolute
// and signed error, in percent, with the worst absolute E2E mean error.
type Medians struct {
	Runs    int      `json:"runs"`
	Abs     Measured `json:"abs_error_pct"`
	Signed  Measured `json:"signed_error_pct"`
	WorstE2 float64  `json:"worst_abs_e2e_mean_error_pct"`
	// WorstRun is the run of WorstE2.
	WorstRun string `json:"worst_run"`
}

// MediansOf takes the medians over the results' whole-run rows.
func MediansOf(rs []Result) Medians {
	m := Medians{Runs: len(rs)}
	pick := []func(*Measured) *float64{
		func(x *Measured) *float64 { return &x.E2EMean }, func(x *Measured) *float64 { return &x.E2EP90 },
		func(x *Measured) *float64 { return &x.E2EP99 }, func(x *Measured) *float64 { return &x.TTFTMean },
		func(x *Measured) *float64 { return &x.TTFTP90 }, func(x *Measured) *float64 { return &x.TTFTP99 },
		func(x *Measured) *float64 { return &x.ITLMean },
	}
	for _, f := range pick {
		var abs, signed []float64
		for i := range rs {
			v := *f(&rs[i].All.ErrorPct)
			abs, signed = append(abs, math.Abs(v)), append(signed, v)
		}
		*f(&m.Abs), *f(&m.Signed) = round2(quantile.Median(abs)), round2(quantile.Median(signed))
	}
	for _, r := range rs {
		if e := math.Abs(r.All.ErrorPct.E2EMean); e >= m.WorstE2 {
			m.WorstE2, m.WorstRun = e, r.Run
		}
	}
	return m
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

// The groups a published sim-to-real study of LLM-serving simulators reports its accuracy
// by, and so the groups in which plan's is compared with the best trained simulator's:
// H100 at TP 1, H100 at TP ≥ 2, and A100 and L40S together; a run on any other GPU forms a
// group of its GPU.
const (
	GroupH100TP1   = "H100 TP 1"
	GroupH100TPn   = "H100 TP ≥ 2"
	GroupA100L40S  = "A100, L40S"
	groupOtherLast = "~" // sorts other GPUs' groups after the named ones
)

// GroupOrder lists the named groups in the order reports print them.
var GroupOrder = []string{GroupH100TP1, GroupH100TPn, GroupA100L40S}

// GroupOf is run's group.
func GroupOf(run Run) string {
	switch g := strings.ToUpper(run.GPU); {
	case g == "H100" && run.TP <= 1:
		return GroupH100TP1
	case g == "H100":
		return GroupH100TPn
	case g == "A100" || g == "L40S":
		return GroupA100L40S
	default:
		return run.GPU
	}
}

// GroupMedians are Medians within one group of runs.
type GroupMedians struct {
	Group string `json:"group"`
	Medians
}

// GroupMediansOf takes the medians within each group the results fall in: the named
// groups in GroupOrder, then any other GPU's, by name.
func GroupMediansOf(rs []Result) []GroupMedians {
	by := map[string][]Result{}
	for _, r := range rs {
		by[r.Group] = append(by[r.Group], r)
	}
	rank := func(g string) string {
		if i := slices.Index(GroupOrder, g); i >= 0 {
			return fmt.Sprint(i)
		}
		return groupOtherLast + g
	}
	names := slices.Collect(maps.Keys(by))
	slices.SortFunc(names, func(a, b string) int { return strings.Compare(rank(a), rank(b)) })
	var out []GroupMedians
	for _, g := range names {
		out = append(out, GroupMedians{Group: g, Medians: MediansOf(by[g])})
	}
	return out
}

// Baseline is a recorded set of median absolute errors and the tolerance, in percentage
// points, a later run may exceed each by before it counts as a regression.
type Baseline struct {
	// Abs are the recorded medians of absolute error, in percent.
	Abs          Measured `json:"abs_error_pct"`
	TolerancePts float64  `json:"tolerance_pct_points"`
	// SingleStream is the recorded median absolute error of the single-stream decode
	// times, in percent (0: none recorded).
	SingleStream float64 `json:"single_stream_abs_error_pct,omitempty"`
	// Note says when and on what the baseline was recorded.
	Note string `json:"note,omitempty"`
}

// BaselineCheck is a run's medians against a baseline.
type BaselineCheck struct {
	Baseline    Baseline `json:"baseline"`
	Regressions []string `json:"regressions,omitempty"`
}

// ReadBaseline reads a baseline file strictly.
func ReadBaseline(path string) (*Baseline, error) {
	data, err := formats.ReadBytes(path)
	if err != nil {
		return nil, err
	}
	var b Baseline
	if err := formats.StrictUnmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if !(b.TolerancePts >= 0) || math.IsInf(b.TolerancePts, 0) {
		return nil, fmt.Errorf("%s: tolerance_pct_points: %g: must be a finite number >= 0", path, b.TolerancePts)
	}
	return &b, nil
}

// CheckSingleStream is the regression, if any, of the single-stream median against the
// baseline's (none where the baseline records none).
func (b Baseline) CheckSingleStream(median float64) []string {
	if b.SingleStream <= 0 || median <= b.SingleStream+b.TolerancePts {
		return nil
	}
	return []string{fmt.Sprintf("median |error| of the single-stream decode %.2f%% > baseline %.2f%% + %.2f points", median, b.SingleStream, b.TolerancePts)}
}

// Check lists each median worse than the baseline's by more than the tolerance.
func (b Baseline) Check(m Medians) BaselineCheck {
	c := BaselineCheck{Baseline: b}
	figs := []struct {
		name      string
		got, base float64
	}{
		{"E2E mean", m.Abs.E2EMean, b.Abs.E2EMean}, {"E2E p90", m.Abs.E2EP90, b.Abs.E2EP90},
		{"E2E p99", m.Abs.E2EP99, b.Abs.E2EP99}, {"TTFT mean", m.Abs.TTFTMean, b.Abs.TTFTMean},
		{"TTFT p90", m.Abs.TTFTP90, b.Abs.TTFTP90}, {"TTFT p99", m.Abs.TTFTP99, b.Abs.TTFTP99},
		{"ITL mean", m.Abs.ITLMean, b.Abs.ITLMean},
	}
	for _, f := range figs {
		if f.got > f.base+b.TolerancePts {
			c.Regressions = append(c.Regressions, fmt.Sprintf("median |error| of %s %.2f%% > baseline %.2f%% + %.2f points", f.name, f.got, f.base, b.TolerancePts))
		}
	}
	return c
}

// printReport writes the per-run table and the medians.
func printReport(env benchapi.Env, rep Report) {
	f := func(v float64) string { return fmt.Sprintf("%.1f", v) }
	e := func(v float64) string { return fmt.Sprintf("%+.1f%%", v) }
	var rows [][]string
	for _, r := range rep.Runs {
		for _, s := range append(slices.Clone(r.Stages), r.All) {
			if s.Stage == "all" && len(r.Stages) == 1 {
				continue
			}
			rate := "all"
			if s.Stage != "all" {
				rate = fmt.Sprintf("%g", s.RateRPS)
			}
			rows = append(rows, []string{r.Run, r.Deployment, rate,
				f(s.Predicted.E2EMean), f(s.Measured.E2EMean), e(s.ErrorPct.E2EMean), e(s.ErrorPct.E2EP99),
				f(s.Predicted.TTFTMean), f(s.Measured.TTFTMean), e(s.ErrorPct.TTFTMean), e(s.ErrorPct.TTFTP99),
				fmt.Sprintf("%.2f", s.Predicted.ITLMean), fmt.Sprintf("%.2f", s.Measured.ITLMean), e(s.ErrorPct.ITLMean)})
		}
	}
	env.Table([]string{"run", "deployment", "req/s", "e2e ms", "real", "err", "p99 err", "ttft ms", "real", "err", "p99 err", "itl ms", "real", "err"}, rows)
	var kv [][]string
	for _, r := range rep.Runs {
		kv = append(kv, []string{r.Run, r.Deployment, fmt.Sprint(r.KVTokens), fmt.Sprint(r.KVEstimateTokens), e(r.KVEstimateErrorPct), fmt.Sprint(r.Preempted)})
	}
	fmt.Fprintln(env.Out)
	env.Table([]string{"run", "deployment", "kv tokens (vLLM)", "plan's estimate", "err", "preempted"}, kv)
	m := rep.Medians
	fmt.Fprintln(env.Out)
	env.Table([]string{"median over " + fmt.Sprint(m.Runs) + " runs", "e2e mean", "e2e p90", "e2e p99", "ttft mean", "ttft p90", "ttft p99", "itl mean"}, [][]string{
		{"|error|", e(m.Abs.E2EMean), e(m.Abs.E2EP90), e(m.Abs.E2EP99), e(m.Abs.TTFTMean), e(m.Abs.TTFTP90), e(m.Abs.TTFTP99), e(m.Abs.ITLMean)},
		{"signed", e(m.Signed.E2EMean), e(m.Signed.E2EP90), e(m.Signed.E2EP99), e(m.Signed.TTFTMean), e(m.Signed.TTFTP90), e(m.Signed.TTFTP99), e(m.Signed.ITLMean)},
	})
	fmt.Fprintf(env.Out, "worst |error| on E2E mean: %.1f%% (run %s)\n", m.WorstE2, m.WorstRun)
	var cycled []string
	for _, r := range rep.Runs {
		if r.UsersPerSystemPrompt > 0 {
			cycled = append(cycled, fmt.Sprintf("%s (%d)", r.Run, r.UsersPerSystemPrompt))
		}
	}
	if len(cycled) > 0 {
		fmt.Fprintf(env.Out, "prompts: inference-perf's drawn list cycled (users per system prompt) for %s; every other run's questions fresh\n", strings.Join(cycled, ", "))
	}
	if len(rep.Groups) > 0 {
		var gr [][]string
		for _, g := range rep.Groups {
			gr = append(gr, []string{g.Group, fmt.Sprint(g.Runs), e(g.Abs.E2EMean), e(g.Abs.TTFTMean), e(g.Abs.ITLMean), e(g.Abs.E2EP99)})
		}
		fmt.Fprintln(env.Out)
		env.Table([]string{"median |error| by group", "runs", "e2e mean", "ttft mean", "itl mean", "e2e p99"}, gr)
	}
	if len(rep.SingleStream) > 0 {
		var ss [][]string
		for _, r := range rep.SingleStream {
			ss = append(ss, []string{r.Config, r.Deployment, fmt.Sprintf("%.2f", r.Predicted), fmt.Sprintf("%.2f", r.MeasuredMs), e(r.ErrorPct)})
		}
		fmt.Fprintln(env.Out)
		env.Table([]string{"single stream", "deployment", "decode ms/token", "real", "err"}, ss)
		fmt.Fprintf(env.Out, "single stream: median |error| %.1f%% over %d deployments (one request at a time)\n", rep.SingleStreamMedian, len(rep.SingleStream))
	}
	if c := rep.Baseline; c != nil {
		if len(c.Regressions) == 0 {
			fmt.Fprintf(env.Out, "baseline: no median worse than recorded (+%.2f points tolerance)\n", c.Baseline.TolerancePts)
		} else {
			for _, r := range c.Regressions {
				fmt.Fprintln(env.Out, "baseline: "+r)
			}
		}
	}
}
