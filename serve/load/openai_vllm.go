package load

// The requests of a `vllm bench serve`-style run (spec §3): --num-prompts requests from a
// dataset (or of fixed lengths), at arrivals drawn as vllm bench draws them, or at a trace's
// recorded times.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"
)

// vllmPlan is OpenAIPlan for a Dataset, a Burstiness or an infinite Rate: MaxRequests
// requests (the dataset's sample, else InputTokens/OutputTokens each), at the dataset's
// recorded times (Timestamps), else at gammaArrivals of Rate and Burstiness (closed loop:
// none), cut at Duration when it is set.
func vllmPlan(o OpenAIOptions) ([]OpenAIRequest, error) {
	n := o.MaxRequests
	if n <= 0 {
		return nil, errors.New("--num-prompts: required (> 0) with --dataset-name, --burstiness or --request-rate inf")
	}
	if o.Model == "" {
		return nil, errors.New("--model: required: the model field of the requests (GET /v1/models lists the server's)")
	}
	var entries []DatasetEntry
	if o.Dataset != nil {
		entries = o.Dataset.Sample(n, o.Seed)
		if len(entries) == 0 {
			return nil, fmt.Errorf("--dataset-path %s: no requests to send", o.Dataset.Path)
		}
	} else {
		if o.InputTokens < 1 || o.OutputTokens < 1 {
			return nil, fmt.Errorf("--input-tokens %d, --output-tokens %d: must be >= 1", o.InputTokens, o.OutputTokens)
		}
		entries = make([]DatasetEntry, n)
		for i := range entries {
			entries[i] = DatasetEntry{InputTokens: o.InputTokens, OutputTokens: o.OutputTokens}
		}
	}
	var at []time.Duration
	switch {
	case o.Timestamps:
		if o.Dataset == nil || !o.Dataset.Timed {
			return nil, errors.New("--dataset-timestamps: needs a dataset with arrival times (burstgpt with Timestamp, mooncake, azure)")
		}
		scale := 1.0
		if o.RateScale > 0 {
			scale = o.RateScale
		}
		at = make([]time.Duration, len(entries))
		for i, e := range entries {
			at[i] = time.Duration(float64(e.At-entries[0].At) / scale)
		}
	case o.Concurrency > 0:
		at = make([]time.Duration, len(entries))
	default:
		if !(o.Rate > 0) {
			return nil, fmt.Errorf("--request-rate: %g: must be > 0 (inf: every request at once)", o.Rate)
		}
		b := o.Burstiness
		if b <= 0 {
			b = 1
		}
		at = gammaArrivals(len(entries), o.Rate, b, o.Seed)
	}
	reqs := make([]OpenAIRequest, 0, len(entries))
	for i, e := range entries {
		if o.Duration > 0 && o.Concurrency == 0 && at[i] >= o.Duration {
			break
		}
		reqs = append(reqs, OpenAIRequest{At: at[i], Model: o.Model, InputTokens: e.InputTokens, OutputTokens: e.OutputTokens,
			Index: i, Prompt: e.Prompt, HashIDs: e.HashIDs})
	}
	return reqs, nil
}

// BlockPrompt is the prompt of n tokens made of the blocks ids name, MooncakeBlock tokens
// each (the last one shorter when n ends within it): a block's words are drawn from a
// generator seeded with (seed, id) alone, so requests that share ids share those blocks
// exactly, and a server's prefix cache finds them; tokens beyond the ids' blocks are the
// request's own (Prompt's words for index).
func BlockPrompt(seed uint64, index int, ids []int64, n int) string {
	var b strings.Builder
	b.Grow(6 * n)
	left := n
	for _, id := range ids {
		if left <= 0 {
			break
		}
		m := min(MooncakeBlock, left)
		writeWords(&b, rand.New(rand.NewPCG(seed^0xb10c, uint64(id))), m)
		left -= m
	}
	if left > 0 {
		writeWords(&b, rand.New(rand.NewPCG(seed, uint64(index)+0x9e3779b97f4a7c15)), left)
	}
	return strings.TrimPrefix(b.String(), " ")
}

func writeWords(b *strings.Builder, rng *rand.Rand, n int) {
	for range n {
		b.WriteString(promptWords[rng.IntN(len(promptWords))])
	}
}

// promptOf is the text request r sends.
func promptOf(seed uint64, r OpenAIRequest) string {
	switch {
	case r.Prompt != "":
		return r.Prompt
	case len(r.HashIDs) > 0:
		return BlockPrompt(seed, r.Index, r.HashIDs, r.InputTokens)
	}
	return Prompt(seed, r.Index, r.InputTokens)
}

// FirstModel is the first model id of the server's GET /v1/models, the model vllm bench serve
// loads when none is named. Its errors are ErrSetup.
func FirstModel(ctx context.Context, base string, header http.Header) (string, error) {
	c := &http.Client{CheckRedirect: refuseRedirect, Timeout: 30 * time.Second}
	defer c.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/v1/models", nil)
	if err != nil {
		return "", setupError{err}
	}
	for k, v := range header {
		req.Header[k] = v
	}
	body, _, err := doGet(c, req)
	if err != nil {
		return "", setupError{fmt.Errorf("--model: not given, and %w", err)}
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil || len(list.Data) == 0 || list.Data[0].ID == "" {
		return "", setupError{fmt.Errorf("--model: not given, and GET %s/v1/models names no model", strings.TrimRight(base, "/"))}
	}
	return list.Data[0].ID, nil
}

// roundPct formats a percentile as vllm bench names it: 99 → "99", 99.9 → "99.9".
func roundPct(p float64) string {
	if p == math.Trunc(p) {
		return fmt.Sprintf("%d", int64(p))
	}
	return fmt.Sprint(p)
}
