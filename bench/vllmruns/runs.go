package vllmruns

import (
	"bytes"
	_ "embed"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/profiler/gpus"
	"github.com/plan-dev/plan/profiler/llm"
)

// embeddedRuns is the validation set: 13 real vLLM 0.15.1 runs on H100 (testdata/NOTICE.md
// cites them).
//
//go:embed testdata/runs.csv
var embeddedRuns []byte

// EmbeddedRuns is the bundled validation set's file name and bytes.
func EmbeddedRuns() (string, []byte) { return "runs.csv (embedded)", embeddedRuns }

// Run is one real serving run: the deployment and engine it ran, the workload that drove
// it, and what the client measured, per stage and over the whole run.
type Run struct {
	ID      string `json:"run"`
	HFModel string `json:"model"`
	GPU     string `json:"gpu"`
	TP      int    `json:"tp"`
	// Weights is BF16 or FP8 (an FP8-dynamic checkpoint).
	Weights             string  `json:"weights"`
	MaxNumSeqs          int     `json:"max_num_seqs"`
	MaxNumBatchedTokens int     `json:"max_num_batched_tokens"`
	GPUMemUtil          float64 `json:"gpu_memory_utilization"`
	// KVGPUBlocks and KVCPUBlocks are the 16-token KV blocks vLLM allocated on the GPUs and
	// in CPU memory for its offloading connector (0: none).
	KVGPUBlocks int64 `json:"kv_gpu_blocks"`
	KVCPUBlocks int64 `json:"kv_cpu_blocks"`
	// The shared-prefix workload: SystemPrompts prompts of SystemPromptTokens, each request
	// one of them plus a question of QuestionTokens, generating exactly OutputTokens.
	SystemPrompts      int `json:"system_prompts"`
	SystemPromptTokens int `json:"system_prompt_tokens"`
	QuestionTokens     int `json:"question_tokens"`
	OutputTokens       int `json:"output_tokens"`
	// UsersPerSystemPrompt is inference-perf's num_users_per_system_prompt (its
	// num_prompts_per_group), from the optional column users_per_system_prompt: the
	// generator draws that many questions per system prompt once, and the requests cycle
	// through those prompts (Trace). 0: not given, every question fresh.
	UsersPerSystemPrompt int `json:"users_per_system_prompt,omitempty"`
	// Stages run back to back; All is the whole run's measurement.
	Stages []Stage   `json:"stages"`
	All    Measured  `json:"all_ms"`
	model  llm.Model // resolved from HFModel and Weights
}

// Stage is one constant-rate stage of a run and its measurement.
type Stage struct {
	RateRPS   float64  `json:"rate_rps"`
	DurationS float64  `json:"duration_s"`
	Measured  Measured `json:"measured_ms"`
}

// Measured is what the client measured over a set of requests, in milliseconds (the same
// figures, as signed or absolute errors in percent, where a field's name says _pct).
type Measured struct {
	E2EMean  float64 `json:"e2e_mean"`
	E2EP90   float64 `json:"e2e_p90"`
	E2EP99   float64 `json:"e2e_p99"`
	TTFTMean float64 `json:"ttft_mean"`
	TTFTP90  float64 `json:"ttft_p90"`
	TTFTP99  float64 `json:"ttft_p99"`
	// ITLMean is the mean time per output token after the first: (E2E mean − TTFT mean)
	// over the generated tokens less one. The study's own column divides by the tokens its
	// client counted by re-tokenizing the text (for Llama-2-7B about 200 of the 247
	// generated), so it is recomputed here from the means with the count the engine
	// generated (ignore_eos): the quantity the simulator predicts.
	ITLMean float64 `json:"itl_mean"`
}

// columns are the runs file's columns, all required (the file's README describes them).
var columns = []string{"run", "model", "gpu", "tp", "weights", "max_num_seqs", "max_num_batched_tokens",
	"gpu_memory_utilization", "kv_gpu_blocks", "kv_cpu_blocks", "system_prompts", "system_prompt_tokens",
	"question_tokens", "output_tokens", "stages", "stage", "stage_rate_rps", "stage_duration_s",
	"e2e_mean_ms", "e2e_p90_ms", "e2e_p99_ms", "ttft_mean_ms", "ttft_p90_ms", "ttft_p99_ms", "itl_mean_ms"}

// usersColumn is the runs file's one optional column (Run.UsersPerSystemPrompt); blank or
// absent, the run's questions are fresh.
const usersColumn = "users_per_system_prompt"

// maxRunsBytes bounds a runs file: the bundled one is 6 KB; a thousand runs fit easily.
const maxRunsBytes = 4 << 20

// row is one CSV record with its file name and line, for errors naming both.
type row struct {
	file string
	line int
	col  map[string]int
	rec  []string
}

func (r row) errf(column, value, rule string) error {
	return fmt.Errorf("%s: row %d: %s: %q: %s", r.file, r.line, column, value, rule)
}

func (r row) text(c string) string { return strings.TrimSpace(r.rec[r.col[c]]) }

// num is a finite number in [lo, hi].
func (r row) num(c string, lo, hi float64) (float64, error) {
	s := r.text(c)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, r.errf(c, s, "not a finite number")
	}
	if v < lo || v > hi {
		return 0, r.errf(c, s, fmt.Sprintf("must be in [%g, %g]", lo, hi))
	}
	return v, nil
}

// whole is a whole number in [lo, hi].
func (r row) whole(c string, lo, hi int64) (int64, error) {
	v, err := r.num(c, float64(lo), float64(hi))
	if err != nil {
		return 0, err
	}
	if v != math.Trunc(v) {
		return 0, r.errf(c, r.text(c), "must be a whole number")
	}
	return int64(v), nil
}

// ReadRuns reads a runs file (the columns of the bundled one: one row per stage and one
// stage=all row per run, rows of a run together). Every error names the file, the row
// (its line) and the column.
func ReadRuns(name string, data []byte) ([]Run, error) {
	rows, err := csvRows(name, data, columns, "a runs file")
	if err != nil {
		return nil, err
	}
	var runs []Run
	byID := map[string]int{}
	for _, r := range rows {
		id := r.text("run")
		if id == "" {
			return nil, r.errf("run", id, "must not be empty")
		}
		i, seen := byID[id]
		if !seen {
			run, err := readRun(r)
			if err != nil {
				return nil, err
			}
			i = len(runs)
			byID[id] = i
			runs = append(runs, run)
		} else if i != len(runs)-1 {
			return nil, r.errf("run", id, "a run's rows must be together")
		}
		if err := readStage(r, &runs[i]); err != nil {
			return nil, err
		}
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("%s: no runs", name)
	}
	for _, run := range runs {
		if err := run.complete(name); err != nil {
			return nil, err
		}
	}
	return runs, nil
}

// csvRows reads a CSV file of at most maxRunsBytes whose header holds every one of want
// (what, "a runs file", names the kind in errors), and returns its records after the
// header, each with its line.
func csvRows(name string, data []byte, want []string, what string) ([]row, error) {
	if len(data) > maxRunsBytes {
		return nil, fmt.Errorf("%s: %d bytes: %s holds at most %d", name, len(data), what, maxRunsBytes)
	}
	cr := csv.NewReader(bytes.NewReader(data))
	cr.TrimLeadingSpace = true
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: row 1: %v", name, err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.ToLower(strings.TrimSpace(h))] = i
	}
	for _, c := range want {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("%s: row 1: no column %s (%s has %s)", name, c, what, strings.Join(want, ", "))
		}
	}
	cr.FieldsPerRecord = len(head)
	var rows []row
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		rows = append(rows, row{file: name, line: line, col: col, rec: rec})
	}
}

// readRun reads the run's deployment, engine and workload columns from its first row.
func readRun(r row) (Run, error) {
	run, err := readDeployment(r, "run")
	if err != nil {
		return run, err
	}
	ints := []struct {
		c      string
		dst    *int
		lo, hi int64
	}{
		{"max_num_seqs", &run.MaxNumSeqs, 1, 1 << 16},
		{"max_num_batched_tokens", &run.MaxNumBatchedTokens, 1, 1 << 20},
		{"system_prompts", &run.SystemPrompts, 1, 1 << 16},
		{"system_prompt_tokens", &run.SystemPromptTokens, 0, 1 << 20},
		{"question_tokens", &run.QuestionTokens, 1, 1 << 20},
		{"output_tokens", &run.OutputTokens, 2, 1 << 20},
	}
	for _, f := range ints {
		v, err := r.whole(f.c, f.lo, f.hi)
		if err != nil {
			return run, err
		}
		*f.dst = int(v)
	}
	if _, ok := r.col[usersColumn]; ok && r.text(usersColumn) != "" {
		v, err := r.whole(usersColumn, 1, 1<<16)
		if err != nil {
			return run, err
		}
		run.UsersPerSystemPrompt = int(v)
	}
	if run.KVGPUBlocks, err = r.whole("kv_gpu_blocks", 1, 1<<40); err != nil {
		return run, err
	}
	if run.KVCPUBlocks, err = r.whole("kv_cpu_blocks", 0, 1<<40); err != nil {
		return run, err
	}
	if run.GPUMemUtil, err = r.num("gpu_memory_utilization", 0.01, 1); err != nil {
		return run, err
	}
	return run, nil
}

// readDeployment reads a row's deployment columns — model (a Hugging Face id), gpu,
// weights (BF16, or FP8 for an FP8 checkpoint) and tp — with the row's id from idColumn.
func readDeployment(r row, idColumn string) (Run, error) {
	run := Run{ID: r.text(idColumn), HFModel: r.text("model"), GPU: r.text("gpu"), Weights: strings.ToUpper(r.text("weights"))}
	g, err := gpus.Lookup(run.GPU)
	if err != nil {
		return run, r.errf("gpu", run.GPU, err.Error())
	}
	run.GPU = g.Name
	m, err := llm.LookupHF(run.HFModel)
	if err != nil {
		return run, r.errf("model", run.HFModel, err.Error())
	}
	switch run.Weights {
	case "BF16":
	case "FP8":
		if m, err = m.Quantize("fp8"); err != nil {
			return run, r.errf("weights", run.Weights, err.Error())
		}
	default:
		return run, r.errf("weights", run.Weights, "must be BF16 or FP8")
	}
	run.model = m
	tp, err := r.whole("tp", 1, 64)
	if err != nil {
		return run, err
	}
	run.TP = int(tp)
	if err := run.model.CheckTP(run.TP); err != nil {
		return run, r.errf("tp", r.text("tp"), err.Error())
	}
	return run, nil
}

// readStage reads one stage row (stage 0, 1, …) or the run's stage=all row.
func readStage(r row, run *Run) error {
	var m Measured
	fields := []struct {
		c   string
		dst *float64
	}{
		{"e2e_mean_ms", &m.E2EMean}, {"e2e_p90_ms", &m.E2EP90}, {"e2e_p99_ms", &m.E2EP99},
		{"ttft_mean_ms", &m.TTFTMean}, {"ttft_p90_ms", &m.TTFTP90}, {"ttft_p99_ms", &m.TTFTP99},
	}
	for _, f := range fields {
		v, err := r.num(f.c, 0, 1e9)
		if err != nil {
			return err
		}
		*f.dst = v
	}
	if _, err := r.num("itl_mean_ms", 0, 1e9); err != nil {
		return err
	}
	if m.TTFTMean <= 0 || m.E2EMean <= m.TTFTMean {
		return r.errf("e2e_mean_ms", r.text("e2e_mean_ms"), fmt.Sprintf("must exceed ttft_mean_ms (%s), which must be > 0", r.text("ttft_mean_ms")))
	}
	m.ITLMean = (m.E2EMean - m.TTFTMean) / float64(run.OutputTokens-1)
	stage := r.text("stage")
	if strings.EqualFold(stage, "all") {
		if run.All.E2EMean > 0 {
			return r.errf("stage", stage, "a run has one stage=all row")
		}
		run.All = m
		return nil
	}
	k, err := r.whole("stage", 0, 1<<10)
	if err != nil {
		return err
	}
	if int(k) != len(run.Stages) {
		return r.errf("stage", stage, fmt.Sprintf("want stage %d: a run's stages come in order", len(run.Stages)))
	}
	rate, err := r.num("stage_rate_rps", 1e-3, 1e4)
	if err != nil {
		return err
	}
	dur, err := r.num("stage_duration_s", 1, 86400)
	if err != nil {
		return err
	}
	if rate*dur > maxStageRequests {
		return r.errf("stage_rate_rps", r.text("stage_rate_rps"), fmt.Sprintf("× stage_duration_s (%g) is over %d requests", dur, maxStageRequests))
	}
	run.Stages = append(run.Stages, Stage{RateRPS: rate, DurationS: dur, Measured: m})
	return nil
}

// maxStageRequests bounds one stage's replayed requests (the bundled runs' largest: 7,200).
const maxStageRequests = 100_000

// complete checks that a run has its stages and its stage=all row.
func (run Run) complete(name string) error {
	switch {
	case len(run.Stages) == 0:
		return fmt.Errorf("%s: run %s: no stage rows (stage 0, 1, …)", name, run.ID)
	case run.All.E2EMean == 0:
		return fmt.Errorf("%s: run %s: no stage=all row", name, run.ID)
	}
	return nil
}

// Label is the run's deployment in one word: model@TPxGPU, with its weight dtype when not
// BF16.
func (run Run) Label() string {
	l := fmt.Sprintf("%s@%dx%s", run.model.Name, run.TP, run.GPU)
	if run.Weights != "BF16" {
		l += "/" + strings.ToLower(run.Weights)
	}
	return l
}

// MoE reports whether the run's model is a mixture of experts.
func (run Run) MoE() bool { return run.model.MoE != nil }
