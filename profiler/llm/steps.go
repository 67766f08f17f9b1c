package llm

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/formats"
)

// Step is one measured engine step: the tokens it computed, how many of them were prompt
// (or recomputed) tokens, and its time (LLM engine digest §2.4).
type Step struct {
	Tokens        int     `json:"tokens"`
	PrefillTokens int     `json:"prefill_tokens"`
	Seconds       float64 `json:"seconds"`
	// ContextTokens (optional; -1 when the table has none) is the tokens the scheduled
	// sequences' KV caches hold after the step: given, FitSteps fits the per-context-token
	// term.
	ContextTokens int `json:"context_tokens"`
}

// stepColumns are the columns (CSV header) or keys (JSONL) of a step table.
var stepColumns = []string{"tokens", "prefill_tokens", "seconds"}

// engineColumns are the optional columns (keys) by which a step log says which engine ran
// it: the model, the GPU type, the GPU count (tensor parallelism: one instance on that many
// GPUs, LLM engine digest §4) and the KV capacity in tokens (vLLM logs its "# GPU blocks"
// at start-up: blocks × block size). A log describes one engine: a column's value is the
// same on every line that gives it.
var engineColumns = append([]string{"model", "gpu", "gpu_count", "kv_capacity_tokens"}, settingColumns...)

// StepLog is a measured step table and what it says of the engine that ran it (empty or 0
// where it does not say).
type StepLog struct {
	Steps            []Step
	Model, GPU       string
	GPUCount         int
	KVCapacityTokens int64
	// Settings are the engine settings columns the log gives (settingColumns: the engine's
	// version and flags), each value normalised; StepLog.Engine turns them into a profile's
	// engine block.
	Settings map[string]string
	// Lines are the lines that first gave each engine column, for errors.
	Lines map[string]int
}

// ReadSteps reads a table of measured step times (ReadStepLog) and returns its steps.
func ReadSteps(name string, data []byte) ([]Step, error) {
	l, err := ReadStepLog(name, data)
	if err != nil {
		return nil, err
	}
	return l.Steps, nil
}

// ReadStepLog reads a table of measured step times, CSV with a header naming the columns
// tokens, prefill_tokens and seconds, optionally context_tokens and the engine columns
// model, gpu, gpu_count and kv_capacity_tokens (in any order; other columns are ignored), or
// JSON lines with those keys. Errors name the file, the line, the field and the value.
func ReadStepLog(name string, data []byte) (*StepLog, error) {
	trim := bytes.TrimSpace(data)
	if len(trim) == 0 {
		return nil, fmt.Errorf("%s: no steps", name)
	}
	l := &StepLog{Lines: map[string]int{}, Settings: map[string]string{}}
	var err error
	if trim[0] == '{' {
		err = readStepsJSONL(name, data, l)
	} else {
		err = readStepsCSV(name, data, l)
	}
	if err != nil {
		return nil, err
	}
	if len(l.Steps) == 0 {
		return nil, fmt.Errorf("%s: no steps", name)
	}
	return l, nil
}

// engine records line's value v of engine column field (blank: not given there). A value
// that differs from an earlier line's is an error: one log, one engine.
func (l *StepLog) engine(name string, line int, field, v string) error {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil
	}
	bad := func(rule string) error { return fmt.Errorf("%s: line %d: %s: %q: %s", name, line, field, v, rule) }
	var prev string
	if slices.Contains(settingColumns, field) {
		n, err := normalSetting(field, v)
		if err != nil {
			return bad(err.Error())
		}
		v, prev = n, l.Settings[field]
	}
	switch field {
	case "model":
		prev = l.Model
	case "gpu":
		prev = l.GPU
	case "gpu_count":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxGPUCount {
			return bad(fmt.Sprintf("must be a whole number in [1, %d]", maxGPUCount))
		}
		v = strconv.Itoa(n)
		if l.GPUCount > 0 {
			prev = strconv.Itoa(l.GPUCount)
		}
	case "kv_capacity_tokens":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return bad("must be a whole number >= 1")
		}
		v = strconv.FormatInt(n, 10)
		if l.KVCapacityTokens > 0 {
			prev = strconv.FormatInt(l.KVCapacityTokens, 10)
		}
	}
	if prev != "" {
		if prev != v {
			return bad(fmt.Sprintf("differs from line %d's %q: a step log describes one engine", l.Lines[field], prev))
		}
		return nil
	}
	l.Lines[field] = line
	switch field {
	case "model":
		l.Model = v
	case "gpu":
		l.GPU = v
	case "gpu_count":
		l.GPUCount, _ = strconv.Atoi(v)
	case "kv_capacity_tokens":
		l.KVCapacityTokens, _ = strconv.ParseInt(v, 10, 64)
	default:
		l.Settings[field] = v
	}
	return nil
}

// maxGPUCount bounds a log's gpu_count: the most GPUs one engine instance spans (a
// multi-node tensor- and pipeline-parallel deployment of 8 nodes of 8).
const maxGPUCount = 64

func readStepsCSV(name string, data []byte, l *StepLog) error {
	r := csv.NewReader(bytes.NewReader(data))
	r.TrimLeadingSpace = true
	head, err := r.Read()
	if err != nil {
		return fmt.Errorf("%s: line 1: %v", name, err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.ToLower(strings.TrimSpace(h))] = i
	}
	for _, c := range stepColumns {
		if _, ok := col[c]; !ok {
			return fmt.Errorf("%s: line 1: header %q: no column %s (want %s)", name, strings.Join(head, ","), c, strings.Join(stepColumns, ", "))
		}
	}
	r.FieldsPerRecord = len(head)
	ci, hasCtx := col["context_tokens"]
	for line := 2; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %v", name, err)
		}
		var s Step
		vals := map[string]float64{}
		for _, c := range stepColumns {
			v, err := strconv.ParseFloat(strings.TrimSpace(rec[col[c]]), 64)
			if err != nil {
				return fmt.Errorf("%s: line %d: %s: %q: not a number", name, line, c, rec[col[c]])
			}
			vals[c] = v
		}
		for _, c := range stepColumns[:2] {
			if v := vals[c]; v != math.Trunc(v) || math.Abs(v) > math.MaxInt32 {
				return fmt.Errorf("%s: line %d: %s: %g: must be a whole number of tokens", name, line, c, v)
			}
		}
		s.Tokens, s.PrefillTokens, s.Seconds, s.ContextTokens = int(vals["tokens"]), int(vals["prefill_tokens"]), vals["seconds"], -1
		if hasCtx {
			c, err := strconv.Atoi(strings.TrimSpace(rec[ci]))
			if err != nil || c < 0 {
				return fmt.Errorf("%s: line %d: context_tokens: %q: must be a whole number >= 0", name, line, rec[ci])
			}
			s.ContextTokens = c
		}
		if err := s.check(); err != nil {
			return fmt.Errorf("%s: line %d: %v", name, line, err)
		}
		for _, c := range engineColumns {
			if i, ok := col[c]; ok {
				if err := l.engine(name, line, c, rec[i]); err != nil {
					return err
				}
			}
		}
		l.Steps = append(l.Steps, s)
	}
}

// stepLine is one JSONL line: a step and, optionally, the engine columns.
type stepLine struct {
	Step
	Model            string  `json:"model"`
	GPU              string  `json:"gpu"`
	GPUCount         float64 `json:"gpu_count"`
	KVCapacityTokens float64 `json:"kv_capacity_tokens"`
	// The engine settings columns (settingColumns), any JSON scalar: read as text.
	VLLMVersion         json.RawMessage `json:"vllm_version"`
	KVAllocation        json.RawMessage `json:"kv_allocation"`
	Release             json.RawMessage `json:"release"`
	BlockSize           json.RawMessage `json:"block_size"`
	EnablePrefixCaching json.RawMessage `json:"enable_prefix_caching"`
	MaxNumBatchedTokens json.RawMessage `json:"max_num_batched_tokens"`
	MaxNumSeqs          json.RawMessage `json:"max_num_seqs"`
}

func readStepsJSONL(name string, data []byte, l *StepLog) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		sl := stepLine{Step: Step{ContextTokens: -1}}
		if err := formats.StrictUnmarshal(b, &sl); err != nil {
			return fmt.Errorf("%s: line %d: %v", name, line, err)
		}
		s := sl.Step
		var keys map[string]json.RawMessage
		_ = json.Unmarshal(b, &keys)
		for _, c := range stepColumns {
			if _, ok := keys[c]; !ok {
				return fmt.Errorf("%s: line %d: %s: missing", name, line, c)
			}
		}
		if _, ok := keys["context_tokens"]; ok && s.ContextTokens < 0 {
			return fmt.Errorf("%s: line %d: context_tokens: %d: must be >= 0", name, line, s.ContextTokens)
		}
		if err := s.check(); err != nil {
			return fmt.Errorf("%s: line %d: %v", name, line, err)
		}
		for _, c := range engineColumns {
			raw, ok := keys[c]
			if !ok {
				continue
			}
			v := strings.Trim(string(raw), `"`)
			if c == "model" || c == "gpu" {
				v = map[string]string{"model": sl.Model, "gpu": sl.GPU}[c]
				if v == "" {
					return fmt.Errorf("%s: line %d: %s: %s: must not be empty", name, line, c, raw)
				}
			}
			if err := l.engine(name, line, c, v); err != nil {
				return err
			}
		}
		l.Steps = append(l.Steps, s)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %v", name, err)
	}
	return nil
}

// check refuses what no engine step can be.
func (s Step) check() error {
	switch {
	case s.Tokens < 1:
		return fmt.Errorf("tokens: %d: must be >= 1", s.Tokens)
	case s.PrefillTokens < 0 || s.PrefillTokens > s.Tokens:
		return fmt.Errorf("prefill_tokens: %d: must be in [0, tokens (%d)]", s.PrefillTokens, s.Tokens)
	case !(s.Seconds > 0) || math.IsInf(s.Seconds, 0) || s.Seconds > formats.MaxDurationUs/1e6:
		return fmt.Errorf("seconds: %g: must be > 0 and finite", s.Seconds)
	}
	return nil
}

// FitSteps turns measured steps into the iteration curves of an LLM profile: the
// decode-only curve over the steps without prompt tokens and the prefill-containing curve
// over the others, each the mean time per distinct scheduled-token count, as measured
// (piecewise linear between points; noisy, non-monotone points are kept: formats.PWLWarnings
// names those that fall by more than 10%). Both kinds must be present. When every step gives
// its context tokens, ctxUs is the per-context-token term: the pooled slope of time over
// context within steps of the same kind and token count (least squares, clamped at ≥ 0, 0
// when it would make a point ≤ 0), and each point is its steps' mean less the term at their
// mean context.
func FitSteps(steps []Step) (decode, prefill []formats.PWLPoint, ctxUs float64, err error) {
	ctxUs = contextTerm(steps)
	decode, prefill = curve(steps, false, ctxUs), curve(steps, true, ctxUs)
	if len(decode) == 0 {
		return nil, nil, 0, fmt.Errorf("no decode-only step (prefill_tokens 0): the decode curve needs one")
	}
	if len(prefill) == 0 {
		return nil, nil, 0, fmt.Errorf("no step with prompt tokens (prefill_tokens > 0): the prefill curve needs one")
	}
	for _, p := range append(slices.Clone(decode), prefill...) {
		if p.Us <= 0 {
			// The term would eat a whole step: fit without it.
			decode, prefill = curve(steps, false, 0), curve(steps, true, 0)
			return decode, prefill, 0, nil
		}
	}
	return decode, prefill, ctxUs, nil
}

// stepKey groups steps of one kind and token count.
type stepKey struct {
	pre    bool
	tokens int
}

// contextTerm is the pooled within-group least-squares slope of step time (µs) over context
// tokens, ≥ 0; 0 when a step lacks its context or the context never varies within a group.
func contextTerm(steps []Step) float64 {
	sx, st, n := map[stepKey]float64{}, map[stepKey]float64{}, map[stepKey]float64{}
	for _, s := range steps {
		if s.ContextTokens < 0 {
			return 0
		}
		k := stepKey{s.PrefillTokens > 0, s.Tokens}
		sx[k] += float64(s.ContextTokens)
		st[k] += s.Seconds * 1e6
		n[k]++
	}
	var num, den float64
	for _, s := range steps {
		k := stepKey{s.PrefillTokens > 0, s.Tokens}
		dx := float64(s.ContextTokens) - sx[k]/n[k]
		num += dx * (s.Seconds*1e6 - st[k]/n[k])
		den += dx * dx
	}
	if den == 0 || num <= 0 {
		return 0
	}
	return math.Round(num/den*1e4) / 1e4
}

func curve(steps []Step, pre bool, ctxUs float64) []formats.PWLPoint {
	sum, n := map[int]float64{}, map[int]int{}
	for _, s := range steps {
		if (s.PrefillTokens > 0) == pre {
			sum[s.Tokens] += s.Seconds*1e6 - ctxUs*float64(max(s.ContextTokens, 0))
			n[s.Tokens]++
		}
	}
	var out []formats.PWLPoint
	for tok, t := range sum {
		out = append(out, formats.PWLPoint{Tokens: tok, Us: round(t / float64(n[tok]))})
	}
	slices.SortFunc(out, func(a, b formats.PWLPoint) int { return a.Tokens - b.Tokens })
	return out
}

// WithSteps returns base with its iteration curves replaced by the measured ones (the
// per-context-token term fitted when the steps give their context, else 0: the curves then
// include the attention of the steps measured) and its decode step at the average batch
// read from the decode curve.
func WithSteps(base formats.LLMProfile, steps []Step) (formats.LLMProfile, error) {
	decode, prefill, ctxUs, err := FitSteps(steps)
	if err != nil {
		return base, err
	}
	it := formats.LLMIteration{}
	if base.Iteration != nil {
		it = *base.Iteration
	}
	it.Decode, it.Prefill, it.DecodeUsPerContextToken = decode, prefill, ctxUs
	base.Iteration = &it
	base.Backend = "import"
	if base.AvgBatch > 0 {
		// The decode step at the average batch: a planner's field, set where the planner's
		// fields are (an engine-only profile, EngineProfile, has none).
		base.DecodeUsPerToken = formats.PWLAt(decode, int(math.Round(max(base.AvgBatch, 1))))
	}
	return base, nil
}
