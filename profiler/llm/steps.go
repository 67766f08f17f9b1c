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
}

// stepColumns are the columns (CSV header) or keys (JSONL) of a step table.
var stepColumns = []string{"tokens", "prefill_tokens", "seconds"}

// ReadSteps reads a table of measured step times, CSV with a header naming the columns
// tokens, prefill_tokens and seconds (in any order; other columns are ignored), or JSON
// lines with those keys. Errors name the file, the line and the field.
func ReadSteps(name string, data []byte) ([]Step, error) {
	trim := bytes.TrimSpace(data)
	if len(trim) == 0 {
		return nil, fmt.Errorf("%s: no steps", name)
	}
	var steps []Step
	var err error
	if trim[0] == '{' {
		steps, err = readStepsJSONL(name, data)
	} else {
		steps, err = readStepsCSV(name, data)
	}
	if err != nil {
		return nil, err
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("%s: no steps", name)
	}
	return steps, nil
}

func readStepsCSV(name string, data []byte) ([]Step, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.TrimLeadingSpace = true
	head, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: line 1: %v", name, err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.ToLower(strings.TrimSpace(h))] = i
	}
	for _, c := range stepColumns {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("%s: line 1: header %q: no column %s (want %s)", name, strings.Join(head, ","), c, strings.Join(stepColumns, ", "))
		}
	}
	r.FieldsPerRecord = len(head)
	var steps []Step
	for line := 2; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			return steps, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		var s Step
		vals := map[string]float64{}
		for _, c := range stepColumns {
			v, err := strconv.ParseFloat(strings.TrimSpace(rec[col[c]]), 64)
			if err != nil {
				return nil, fmt.Errorf("%s: line %d: %s: %q: not a number", name, line, c, rec[col[c]])
			}
			vals[c] = v
		}
		for _, c := range stepColumns[:2] {
			if v := vals[c]; v != math.Trunc(v) || math.Abs(v) > math.MaxInt32 {
				return nil, fmt.Errorf("%s: line %d: %s: %g: must be a whole number of tokens", name, line, c, v)
			}
		}
		s.Tokens, s.PrefillTokens, s.Seconds = int(vals["tokens"]), int(vals["prefill_tokens"]), vals["seconds"]
		if err := s.check(); err != nil {
			return nil, fmt.Errorf("%s: line %d: %v", name, line, err)
		}
		steps = append(steps, s)
	}
}

func readStepsJSONL(name string, data []byte) ([]Step, error) {
	var steps []Step
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var s Step
		if err := formats.StrictUnmarshal(b, &s); err != nil {
			return nil, fmt.Errorf("%s: line %d: %v", name, line, err)
		}
		var keys map[string]json.RawMessage
		_ = json.Unmarshal(b, &keys)
		for _, c := range stepColumns {
			if _, ok := keys[c]; !ok {
				return nil, fmt.Errorf("%s: line %d: %s: missing", name, line, c)
			}
		}
		if err := s.check(); err != nil {
			return nil, fmt.Errorf("%s: line %d: %v", name, line, err)
		}
		steps = append(steps, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	return steps, nil
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
// names those that fall by more than 10%). Both kinds must be present.
func FitSteps(steps []Step) (decode, prefill []formats.PWLPoint, err error) {
	decode, prefill = curve(steps, false), curve(steps, true)
	if len(decode) == 0 {
		return nil, nil, fmt.Errorf("no decode-only step (prefill_tokens 0): the decode curve needs one")
	}
	if len(prefill) == 0 {
		return nil, nil, fmt.Errorf("no step with prompt tokens (prefill_tokens > 0): the prefill curve needs one")
	}
	return decode, prefill, nil
}

func curve(steps []Step, pre bool) []formats.PWLPoint {
	sum, n := map[int]float64{}, map[int]int{}
	for _, s := range steps {
		if (s.PrefillTokens > 0) == pre {
			sum[s.Tokens] += s.Seconds
			n[s.Tokens]++
		}
	}
	var out []formats.PWLPoint
	for tok, t := range sum {
		out = append(out, formats.PWLPoint{Tokens: tok, Us: round(t / float64(n[tok]) * 1e6)})
	}
	slices.SortFunc(out, func(a, b formats.PWLPoint) int { return a.Tokens - b.Tokens })
	return out
}

// WithSteps returns base with its iteration curves replaced by the measured ones (the
// per-context-token term is 0: the measured curves include the attention of the steps
// measured) and its decode step at the average batch read from the decode curve.
func WithSteps(base formats.LLMProfile, steps []Step) (formats.LLMProfile, error) {
	decode, prefill, err := FitSteps(steps)
	if err != nil {
		return base, err
	}
	it := formats.LLMIteration{}
	if base.Iteration != nil {
		it = *base.Iteration
	}
	it.Decode, it.Prefill, it.DecodeUsPerContextToken = decode, prefill, 0
	base.Iteration = &it
	base.Backend = "import"
	base.DecodeUsPerToken = at(decode, int(math.Round(max(base.AvgBatch, 1))))
	return base, nil
}

// at evaluates a curve as the simulator does (flat below the first point, linear between,
// the last segment's slope clamped ≥ 0 above the last).
func at(p []formats.PWLPoint, x int) float64 {
	if x <= p[0].Tokens {
		return p[0].Us
	}
	for i := 1; i < len(p); i++ {
		if x <= p[i].Tokens {
			a, b := p[i-1], p[i]
			return a.Us + (b.Us-a.Us)*float64(x-a.Tokens)/float64(b.Tokens-a.Tokens)
		}
	}
	n := len(p)
	if n == 1 {
		return p[0].Us
	}
	a, b := p[n-2], p[n-1]
	return b.Us + max(b.Us-a.Us, 0)*float64(x-b.Tokens)/float64(b.Tokens-a.Tokens)
}
