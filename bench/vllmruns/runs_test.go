package vllmruns

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReadRunsBadInput: a runs file with a missing column, an unknown model or GPU, a
// non-finite or out-of-range value, or stages out of order is refused with an error naming
// the file, the row and the column.
func TestReadRunsBadInput(t *testing.T) {
	_, good := EmbeddedRuns()
	lines := strings.Split(strings.TrimSpace(string(good)), "\n")
	head, first := lines[0], lines[1]
	cols := strings.Split(head, ",")
	col := func(name string) int {
		for i, c := range cols {
			if c == name {
				return i
			}
		}
		t.Fatalf("no column %s", name)
		return -1
	}
	with := func(name, v string) string {
		f := strings.Split(first, ",")
		f[col(name)] = v
		return head + "\n" + strings.Join(f, ",") + "\n"
	}
	for _, tc := range []struct {
		name, data, want string
	}{
		{"missing column", strings.Replace(head, ",kv_gpu_blocks", "", 1) + "\n", "r.csv: row 1: no column kv_gpu_blocks"},
		{"unknown model", with("model", "acme/Unknown-7B"), `r.csv: row 2: model: "acme/Unknown-7B": LLM "acme/Unknown-7B": no catalogue model`},
		{"unknown gpu", with("gpu", "H900"), `r.csv: row 2: gpu: "H900": GPU "H900": unknown`},
		{"NaN", with("e2e_mean_ms", "NaN"), `r.csv: row 2: e2e_mean_ms: "NaN": not a finite number`},
		{"infinite", with("ttft_p99_ms", "+Inf"), `r.csv: row 2: ttft_p99_ms: "+Inf": not a finite number`},
		{"tp out of range", with("tp", "0"), `r.csv: row 2: tp: "0": must be in [1, 64]`},
		{"tp the model cannot shard", with("tp", "3"), `r.csv: row 2: tp: "3"`},
		{"weights", with("weights", "INT4"), `r.csv: row 2: weights: "INT4": must be BF16 or FP8`},
		{"stage out of order", with("stage", "1"), `r.csv: row 2: stage: "1": want stage 0`},
		{"e2e below ttft", with("e2e_mean_ms", "1"), `r.csv: row 2: e2e_mean_ms: "1": must exceed ttft_mean_ms`},
		{"no all row", head + "\n" + first + "\n", "r.csv: run 17: no stage=all row"},
		{"users zero", head + ",users_per_system_prompt\n" + first + ",0\n", `r.csv: row 2: users_per_system_prompt: "0": must be in [1, 65536]`},
		{"users fractional", head + ",users_per_system_prompt\n" + first + ",2.5\n", `r.csv: row 2: users_per_system_prompt: "2.5": must be a whole number`},
		{"users not a number", head + ",users_per_system_prompt\n" + first + ",many\n", `r.csv: row 2: users_per_system_prompt: "many": not a finite number`},
		{"empty", head + "\n", "r.csv: no runs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadRuns("r.csv", []byte(tc.data))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %v, want prefix %q", err, tc.want)
			}
		})
	}
}

// TestBundledRuns: the bundled set reads whole — 13 runs, every stage with its rate, the
// measured ITL recomputed from the means with the generated tokens — and the workload it
// replays has each stage's requests at constant intervals.
func TestBundledRuns(t *testing.T) {
	runs := bundled(t)
	if len(runs) != 13 {
		t.Fatalf("%d runs, want 13", len(runs))
	}
	for _, r := range runs {
		tr := Trace(r, 1)
		want := 0
		for _, s := range r.Stages {
			want += int(s.RateRPS*s.DurationS + 0.5)
		}
		if len(tr.Requests) != want {
			t.Errorf("run %s: %d requests, want %d", r.ID, len(tr.Requests), want)
		}
		if r.All.ITLMean <= 0 || r.All.ITLMean > r.All.E2EMean {
			t.Errorf("run %s: ITL %g", r.ID, r.All.ITLMean)
		}
	}
}

// TestValidationBaseline replays the bundled runs and holds the medians of absolute error
// to testdata/baseline.json (-update rewrites it from this run): a change of the step model
// or the engine that makes plan's predictions of the real runs worse fails here.
func TestValidationBaseline(t *testing.T) {
	runs := bundled(t)
	res, err := ReplayAll(context.Background(), runs, replayer(), 1, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := MediansOf(res)
	name, data := EmbeddedSingleStream()
	ss, err := ReadSingleStream(name, data)
	if err != nil {
		t.Fatal(err)
	}
	var sr []SingleStreamResult
	for _, s := range ss {
		r, err := ReplaySingleStream(context.Background(), s, replayer())
		if err != nil {
			t.Fatal(err)
		}
		sr = append(sr, r)
	}
	single := SingleStreamMedian(sr)
	path := filepath.Join("testdata", "baseline.json")
	if *update {
		b := Baseline{Abs: m.Abs, TolerancePts: 1, SingleStream: single, Note: "medians over the 13 bundled runs and the 12 single-stream deployments at the fitted corrections; written by go test ./bench/vllmruns -run TestValidationBaseline -update"}
		data, err := json.MarshalIndent(b, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	base, err := ReadBaseline(path)
	if err != nil {
		t.Fatal(err)
	}
	if c := base.Check(m); len(c.Regressions) > 0 {
		t.Errorf("worse than %s: %s", path, strings.Join(c.Regressions, "; "))
	}
	if r := base.CheckSingleStream(single); len(r) > 0 {
		t.Errorf("worse than %s: %s", path, strings.Join(r, "; "))
	}
	if base.SingleStream <= 0 {
		t.Errorf("%s records no single-stream median", path)
	}
	t.Logf("medians |error|: E2E %.2f%%, TTFT %.2f%%, ITL %.2f%%; worst E2E %.1f%% (run %s)", m.Abs.E2EMean, m.Abs.TTFTMean, m.Abs.ITLMean, m.WorstE2, m.WorstRun)
}

// TestGroups: a run's group is the published comparison's (H100 by TP, A100 with L40S,
// any other GPU its own), and the medians are taken within each, named groups first.
func TestGroups(t *testing.T) {
	for _, tc := range []struct {
		gpu   string
		tp    int
		group string
	}{
		{"H100", 1, GroupH100TP1}, {"h100", 2, GroupH100TPn}, {"H100", 8, GroupH100TPn},
		{"A100", 4, GroupA100L40S}, {"L40S", 1, GroupA100L40S}, {"H200", 1, "H200"},
	} {
		if got := GroupOf(Run{GPU: tc.gpu, TP: tc.tp}); got != tc.group {
			t.Errorf("%s TP %d: group %q, want %q", tc.gpu, tc.tp, got, tc.group)
		}
	}
	res := func(group string, e2e float64) Result {
		return Result{Group: group, All: StageResult{ErrorPct: Measured{E2EMean: e2e}}}
	}
	got := GroupMediansOf([]Result{res("H200", 1), res(GroupA100L40S, -30), res(GroupH100TP1, 2), res(GroupA100L40S, 10), res(GroupH100TP1, -6), res(GroupH100TP1, 40)})
	want := []struct {
		group string
		runs  int
		e2e   float64
	}{{GroupH100TP1, 3, 6}, {GroupA100L40S, 2, 20}, {"H200", 1, 1}}
	if len(got) != len(want) {
		t.Fatalf("groups %+v", got)
	}
	for i, w := range want {
		if g := got[i]; g.Group != w.group || g.Runs != w.runs || g.Abs.E2EMean != w.e2e {
			t.Errorf("group %d: %s, %d runs, median |E2E| %g; want %s, %d, %g", i, g.Group, g.Runs, g.Abs.E2EMean, w.group, w.runs, w.e2e)
		}
	}
}

// TestPromptCycle: with users_per_system_prompt, the replayed prompts are inference-perf's
// shared_prefix list — system prompts × users prompts drawn once and cycled — so request i
// and request i + the list's length send the same prompt, two prompts of one system prompt
// share its whole blocks and nothing after, and every prompt is whole blocks of ids the
// trace format accepts. Replayed, the repeats hit the prefix cache: a run's mean TTFT falls
// below the same run's with every question fresh. Blank, the column reads as not given.
func TestPromptCycle(t *testing.T) {
	_, good := EmbeddedRuns()
	lines := strings.Split(strings.TrimSpace(string(good)), "\n")
	var b strings.Builder
	b.WriteString(lines[0] + ",users_per_system_prompt\n")
	for i, l := range lines[1:] {
		v := "5"
		if !strings.HasPrefix(l, "62,") {
			v = ""
		}
		if i > 40 {
			break
		}
		b.WriteString(l + "," + v + "\n")
	}
	runs, err := ReadRuns("r.csv", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	var run Run
	for _, r := range runs {
		switch {
		case r.ID == "62":
			run = r
		case r.UsersPerSystemPrompt != 0:
			t.Errorf("run %s: users %d from a blank cell, want 0", r.ID, r.UsersPerSystemPrompt)
		}
	}
	if run.UsersPerSystemPrompt != 5 || run.SystemPrompts != 9 {
		t.Fatalf("run 62: users %d, system prompts %d; want 5 and 9", run.UsersPerSystemPrompt, run.SystemPrompts)
	}
	tr := Trace(run, 1)
	if err := tr.Validate().Err(); err != nil {
		t.Fatal(err)
	}
	n := run.SystemPrompts * run.UsersPerSystemPrompt
	shared := run.SystemPromptTokens / blockTokens
	distinct := map[string]bool{}
	for i, r := range tr.Requests {
		ids := r.Hashes()
		if want := (r.InputTokens + blockTokens - 1) / blockTokens; len(ids) != want {
			t.Fatalf("request %d: %d ids, want %d", i, len(ids), want)
		}
		if i+n < len(tr.Requests) && !slices.Equal(ids, tr.Requests[i+n].Hashes()) {
			t.Fatalf("request %d and %d: different prompts, want the list cycled", i, i+n)
		}
		distinct[fmt.Sprint(ids)] = true
	}
	if len(distinct) != n {
		t.Fatalf("%d distinct prompts, want %d", len(distinct), n)
	}
	// Each system prompt heads users prompts, which share its whole blocks only.
	bySys := map[int64][][]int64{}
	for i := range n {
		ids := tr.Requests[i].Hashes()
		bySys[ids[0]] = append(bySys[ids[0]], ids)
	}
	if len(bySys) != run.SystemPrompts {
		t.Fatalf("%d system prompts, want %d", len(bySys), run.SystemPrompts)
	}
	for _, ps := range bySys {
		if len(ps) != run.UsersPerSystemPrompt {
			t.Fatalf("%d prompts of one system prompt, want %d", len(ps), run.UsersPerSystemPrompt)
		}
		for _, p := range ps[1:] {
			if !slices.Equal(p[:shared], ps[0][:shared]) || p[shared] == ps[0][shared] {
				t.Fatalf("prompts %v and %v: want %d shared blocks then their own", p[:shared+1], ps[0][:shared+1], shared)
			}
		}
	}
	// A list longer than the run's requests: every request a prompt of its own, drawn
	// without building the list, its system prompt's blocks still shared.
	long := run
	long.UsersPerSystemPrompt = 1 << 16
	lt := Trace(long, 1)
	if err := lt.Validate().Err(); err != nil {
		t.Fatal(err)
	}
	seen, groups := map[int64]bool{}, map[int64]bool{}
	for i, r := range lt.Requests {
		ids := r.Hashes()
		if own := ids[shared]; seen[own] {
			t.Fatalf("request %d repeats a prompt of a %d-prompt list over %d requests", i, run.SystemPrompts<<16, len(lt.Requests))
		} else {
			seen[own] = true
		}
		groups[ids[0]] = true
	}
	if len(groups) != run.SystemPrompts {
		t.Fatalf("%d system prompts among the long list's requests, want %d", len(groups), run.SystemPrompts)
	}
	run.Stages = run.Stages[:1]
	run.Stages[0].DurationS = 60
	fresh := run
	fresh.UsersPerSystemPrompt = 0
	ttft := func(r Run) float64 {
		res, err := Replay(context.Background(), r, replayer(), 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.UsersPerSystemPrompt != r.UsersPerSystemPrompt {
			t.Errorf("result says %d users per system prompt, replayed %d", res.UsersPerSystemPrompt, r.UsersPerSystemPrompt)
		}
		return res.Stages[0].Predicted.TTFTMean
	}
	c, f := ttft(run), ttft(fresh)
	t.Logf("mean TTFT cycled %.2f ms, fresh %.2f ms", c, f)
	if !(c < f) {
		t.Errorf("mean TTFT %.2f ms with the prompts cycled, %.2f with fresh questions: want the repeats cached", c, f)
	}
}
