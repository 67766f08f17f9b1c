package vllmruns

import (
	"context"
	_ "embed"
	"fmt"
	"math"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/base/quantile"
)

// embeddedSingleStream is the decode time per token measured on one streaming request at a
// time on each deployment of the runs' campaign, H100 and L40S (testdata/NOTICE.md cites
// it): the only L40S measurements and the only batch-of-one ones the project has.
//
//go:embed testdata/singlestream.csv
var embeddedSingleStream []byte

// EmbeddedSingleStream is the bundled single-stream file's name and bytes.
func EmbeddedSingleStream() (string, []byte) {
	return "singlestream.csv (embedded)", embeddedSingleStream
}

// singleStreamColumns are a single-stream file's columns, all required.
var singleStreamColumns = []string{"config", "model", "gpu", "tp", "weights", "prompt_tokens", "output_tokens", "decode_ms_per_token"}

// SingleStream is one deployment's decode time per token measured on a single streaming
// request: a batch of one at every step, so it isolates the step model's weight reads,
// per-layer kernels and per-step overhead from batching and queueing.
type SingleStream struct {
	Deployment   Run     // the deployment columns (ID is the config name)
	PromptTokens int     `json:"prompt_tokens"`
	OutputTokens int     `json:"output_tokens"`
	MeasuredMs   float64 `json:"decode_ms_per_token"`
}

// ReadSingleStream reads a single-stream file (the bundled one's columns). Every error
// names the file, the row and the column.
func ReadSingleStream(name string, data []byte) ([]SingleStream, error) {
	rows, err := csvRows(name, data, singleStreamColumns, "a single-stream file")
	if err != nil {
		return nil, err
	}
	var out []SingleStream
	seen := map[string]bool{}
	for _, r := range rows {
		id := r.text("config")
		if id == "" || seen[id] {
			return nil, r.errf("config", id, "must be a name no other row has")
		}
		seen[id] = true
		d, err := readDeployment(r, "config")
		if err != nil {
			return nil, err
		}
		s := SingleStream{Deployment: d}
		prompt, err := r.whole("prompt_tokens", 1, 1<<20)
		if err != nil {
			return nil, err
		}
		outTok, err := r.whole("output_tokens", 3, 1<<20)
		if err != nil {
			return nil, err
		}
		s.PromptTokens, s.OutputTokens = int(prompt), int(outTok)
		if s.MeasuredMs, err = r.num("decode_ms_per_token", 1e-3, 1e5); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no rows", name)
	}
	return out, nil
}

// singleStreamEngine is the engine the measurements ran (testdata/NOTICE.md): the campaign's
// flags, vLLM's default memory utilization.
const (
	singleStreamSeqs    = 128
	singleStreamBatched = 2048
	singleStreamMemUtil = 0.9
)

// SingleStreamResult is one deployment's measured and predicted decode time per token.
type SingleStreamResult struct {
	Config     string  `json:"config"`
	Deployment string  `json:"deployment"`
	Group      string  `json:"group"`
	MeasuredMs float64 `json:"measured_ms"`
	Predicted  float64 `json:"predicted_ms"`
	ErrorPct   float64 `json:"error_pct"`
}

// ReplaySingleStream replays s's one request — its prompt, then its output tokens — alone
// through the engine of the deployment's analytic profile (the campaign's engine flags,
// plan's own KV estimate) and returns the time per token after the first, as the client
// measured it.
func ReplaySingleStream(ctx context.Context, s SingleStream, replay Replayer) (SingleStreamResult, error) {
	run := s.Deployment
	run.MaxNumSeqs, run.MaxNumBatchedTokens, run.GPUMemUtil = singleStreamSeqs, singleStreamBatched, singleStreamMemUtil
	res := SingleStreamResult{Config: run.ID, Deployment: run.Label(), Group: GroupOf(run), MeasuredMs: s.MeasuredMs}
	prof, est, err := Profile(run, nil)
	if err != nil {
		return res, err
	}
	prof.KVCapacityTokens = est
	t := &formats.Trace{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: "Trace"},
		Requests: []formats.TraceRequest{{InputTokens: s.PromptTokens, OutputTokens: s.OutputTokens}}}
	t.Metadata.Name = "single-stream-" + run.ID
	recs, err := replay(ctx, prof, t.Metadata.Name, t)
	if err != nil {
		return res, fmt.Errorf("single stream %s: %v", run.ID, err)
	}
	if len(recs) != 1 || recs[0].FirstTokenUs == nil {
		return res, fmt.Errorf("single stream %s: the request was not answered", run.ID)
	}
	r := recs[0]
	res.Predicted = round2(float64(r.DoneUs-*r.FirstTokenUs) / 1e3 / float64(s.OutputTokens-1))
	res.ErrorPct = pct(res.Predicted, s.MeasuredMs)
	return res, nil
}

// SingleStreamMedian is the median absolute error over rs, percent.
func SingleStreamMedian(rs []SingleStreamResult) float64 {
	abs := make([]float64, len(rs))
	for i, r := range rs {
		abs[i] = math.Abs(r.ErrorPct)
	}
	return round2(quantile.Median(abs))
}
