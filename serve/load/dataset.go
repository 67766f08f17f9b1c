package load

// Datasets for `plan load --openai --dataset-name` (the names and sampling of `vllm bench
// serve`, ecosystem-dropin spec §3 and §4): each reader turns a file into entries with token
// lengths (and, for ShareGPT, the prompt text; for the traces, arrival times), and
// Dataset.Sample picks the run's --num-prompts of them, seeded.
//
// There is no tokenizer here: lengths a file states in tokens (BurstGPT, Mooncake, Azure) are
// used as they are; a text's length (ShareGPT) is estimated as EstimateTokens does, about
// four characters a token (the usual rule of thumb for English and BPE vocabularies), so a
// ShareGPT run's token counts, and vLLM's length filter on them, are approximations.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
	"unicode/utf8"

	"github.com/plan-dev/plan/dataplane/workload"
)

// Dataset names (--dataset-name).
const (
	DatasetShareGPT = "sharegpt"
	DatasetBurstGPT = "burstgpt"
	DatasetMooncake = "mooncake"
	DatasetAzure    = "azure"
	DatasetRandom   = "random"
)

// DatasetNames are the accepted --dataset-name values.
var DatasetNames = []string{DatasetShareGPT, DatasetBurstGPT, DatasetMooncake, DatasetAzure, DatasetRandom}

// DatasetEntry is one request a dataset describes.
type DatasetEntry struct {
	// At is the recorded arrival, from the dataset's first request (Dataset.Timed only).
	At time.Duration
	// Prompt is the text to send; "" = a generated prompt of InputTokens tokens (Prompt), or
	// with HashIDs one built of shared blocks (BlockPrompt).
	Prompt                    string
	InputTokens, OutputTokens int
	// HashIDs name the prompt's MooncakeBlock-token blocks: equal ids, equal blocks.
	HashIDs []int64
}

// Dataset is a file's entries.
type Dataset struct {
	Name    string // one of DatasetNames
	Path    string // the file ("" for random)
	Entries []DatasetEntry
	// Timed: entries carry recorded arrival times (BurstGPT with Timestamp, Mooncake, Azure),
	// which --dataset-timestamps replays instead of --request-rate.
	Timed bool
}

// EstimateTokens is the token count this package assumes for a text: ⌈characters / 4⌉
// (no tokenizer; about four characters a token for English text in the common BPE
// vocabularies).
func EstimateTokens(s string) int {
	return (utf8.RuneCountInString(s) + 3) / 4
}

// Sample picks n entries for a run, seeded: ShareGPT and BurstGPT as vllm bench does
// (shuffled, then the first n; fewer than n are oversampled, drawn again with replacement);
// the traces (Mooncake, Azure) their first n in file order, so a timed replay keeps its
// shape (a trace shorter than n gives all it has); random data is generated n long already.
func (d *Dataset) Sample(n int, seed uint64) []DatasetEntry {
	if n <= 0 || len(d.Entries) == 0 {
		return nil
	}
	switch d.Name {
	case DatasetShareGPT, DatasetBurstGPT:
		rng := rand.New(rand.NewPCG(seed, 0x5ea3c4))
		idx := rng.Perm(len(d.Entries))
		out := make([]DatasetEntry, 0, n)
		for i := 0; i < n && i < len(idx); i++ {
			out = append(out, d.Entries[idx[i]])
		}
		for len(out) < n {
			out = append(out, d.Entries[rng.IntN(len(d.Entries))])
		}
		return out
	default:
		return d.Entries[:min(n, len(d.Entries))]
	}
}

// RandomDataset is vllm bench's random dataset: n requests with input lengths drawn
// uniformly from the integers in [⌊in·(1−ratio)⌋, ⌈in·(1+ratio)⌉] and output lengths likewise
// (ratio 0: exactly in and out), at least 1 token each; prompts are generated (Prompt).
func RandomDataset(n, in, out int, ratio float64, seed uint64) (*Dataset, error) {
	switch {
	case in < 1:
		return nil, fmt.Errorf("--random-input-len: %d: must be >= 1", in)
	case out < 1:
		return nil, fmt.Errorf("--random-output-len: %d: must be >= 1", out)
	case !(ratio >= 0 && ratio < 1):
		return nil, fmt.Errorf("--random-range-ratio: %g: must be in [0, 1)", ratio)
	}
	rng := rand.New(rand.NewPCG(seed, 0x7a4d0))
	draw := func(v int) int {
		lo := max(int(math.Floor(float64(v)*(1-ratio))), 1)
		hi := max(int(math.Ceil(float64(v)*(1+ratio))), lo)
		return lo + rng.IntN(hi-lo+1)
	}
	d := &Dataset{Name: DatasetRandom, Entries: make([]DatasetEntry, n)}
	for i := range d.Entries {
		d.Entries[i] = DatasetEntry{InputTokens: draw(in), OutputTokens: draw(out)}
	}
	return d, nil
}

// gammaArrivals are the arrival times of n requests at rate (requests/s) with gamma
// inter-arrival times of shape burstiness (scale 1/(rate·burstiness), mean 1/rate; shape 1 is
// Poisson, smaller is burstier), then rescaled so the last arrival is at n/rate, as vllm
// bench serve schedules them (spec §3). An infinite rate sends everything at 0.
func gammaArrivals(n int, rate, burstiness float64, seed uint64) []time.Duration {
	at := make([]time.Duration, n)
	if n == 0 || math.IsInf(rate, 1) {
		return at
	}
	rng := rand.New(rand.NewPCG(seed, 0x6a3a))
	theta := 1 / (rate * burstiness)
	ts := make([]float64, n)
	var t float64
	for i := range ts {
		t += workload.GammaSample(rng, burstiness) * theta
		ts[i] = t
	}
	scale := 1.0
	if t > 0 {
		scale = (float64(n) / rate) / t
	}
	for i, v := range ts {
		at[i] = time.Duration(math.Round(v * scale * 1e9))
	}
	return at
}

// lineOf is the 1-based line of byte offset off in data.
func lineOf(data []byte, off int64) int {
	line := 1
	for i := int64(0); i < off && i < int64(len(data)); i++ {
		if data[i] == '\n' {
			line++
		}
	}
	return line
}
