package prefixcache

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"sort"
)

// Range is an inclusive range of integers drawn uniformly (Min = Max: that value).
type Range struct{ Min, Max int }

func (r Range) draw(rng *rand.Rand) int {
	if r.Max <= r.Min {
		return r.Min
	}
	return r.Min + rng.Intn(r.Max-r.Min+1)
}

// SessionConfig shapes a Mooncake-style trace of chat sessions (Sessions generates it).
type SessionConfig struct {
	// Seed makes the trace: the same config gives the same rows.
	Seed int64
	// Sessions is how many conversations; SystemPrompts how many distinct system prompts
	// they open with (each session picks one uniformly), of SystemTokens tokens each.
	Sessions      int
	SystemPrompts int
	SystemTokens  Range
	// Turns per session; each turn adds UserTokens of user text to the context and the
	// model answers with OutputTokens.
	Turns        Range
	UserTokens   Range
	OutputTokens Range
	// BlockTokens is the hash-id block size (Mooncake: 512, llm-engine-2.md §3).
	BlockTokens int
	// SessionGapMs is the mean gap between session starts and ThinkMs the mean gap between a
	// session's turns (both exponential).
	SessionGapMs float64
	ThinkMs      float64
}

// DefaultSessions is a small conversation workload: 200 sessions over 8 system prompts of
// 1–3k tokens, 1–6 turns of 50–400 user and 20–300 output tokens, 512-token hash blocks, a
// session every 200 ms and 2 s think time.
func DefaultSessions(seed int64) SessionConfig {
	return SessionConfig{
		Seed: seed, Sessions: 200, SystemPrompts: 8, SystemTokens: Range{1000, 3000},
		Turns: Range{1, 6}, UserTokens: Range{50, 400}, OutputTokens: Range{20, 300},
		BlockTokens: 512, SessionGapMs: 200, ThinkMs: 2000,
	}
}

// TraceRow is one request of a Mooncake trace (kvcache-ai/Mooncake, FAST'25; the JSONL
// fields of llm-engine-2.md §3), with the session and turn it came from (not written).
type TraceRow struct {
	TimestampMs  int64   `json:"timestamp"`
	InputLength  int     `json:"input_length"`
	OutputLength int     `json:"output_length"`
	HashIDs      []int64 `json:"hash_ids"`
	Session      int     `json:"-"`
	Turn         int     `json:"-"`
}

// Prompt is the row's prompt for the pool: its hash ids at the trace's block size, and
// unique (UniqueID) for its output.
func (r TraceRow) Prompt(blockTokens int, unique uint64) Prompt {
	return Prompt{InputTokens: r.InputLength, HashIDs: r.HashIDs, HashBlockTokens: blockTokens, Unique: unique}
}

// Sessions generates a Mooncake-style trace: each session opens with one of the shared
// system prompts; turn k's prompt is turn k−1's prompt, its answer and new user text, so it
// extends the earlier context. Hash ids follow Mooncake's meaning (one id per BlockTokens
// block of the prompt, equal ids = equal token prefix): a block full in some earlier prompt
// of the session (or in the system prompt) keeps its id; a block first full now gets a new
// id; a partial last block always gets a new one (its content is not a full block's). Rows
// are in timestamp order (ties: session, then turn). Deterministic in cfg.Seed.
func Sessions(cfg SessionConfig) ([]TraceRow, error) {
	switch {
	case cfg.Sessions < 0 || cfg.SystemPrompts < 1 || cfg.BlockTokens < 1:
		return nil, fmt.Errorf("prefixcache: sessions %d, system prompts %d, block tokens %d: need >= 0, >= 1, >= 1", cfg.Sessions, cfg.SystemPrompts, cfg.BlockTokens)
	case cfg.Turns.Min < 1 || cfg.UserTokens.Min < 1 || cfg.OutputTokens.Min < 1 || cfg.SystemTokens.Min < 0:
		return nil, fmt.Errorf("prefixcache: turns, user and output tokens need a minimum >= 1, system tokens >= 0")
	case cfg.SessionGapMs < 0 || cfg.ThinkMs < 0:
		return nil, fmt.Errorf("prefixcache: gaps must be >= 0")
	}
	rng := rand.New(rand.NewSource(cfg.Seed))
	var next int64 // next fresh hash id
	fresh := func() int64 { next++; return next - 1 }
	type system struct {
		tokens int
		ids    []int64 // its full blocks' ids
	}
	systems := make([]system, cfg.SystemPrompts)
	for i := range systems {
		n := cfg.SystemTokens.draw(rng)
		systems[i] = system{tokens: n}
		for range n / cfg.BlockTokens {
			systems[i].ids = append(systems[i].ids, fresh())
		}
	}
	var rows []TraceRow
	start := 0.0
	for s := range cfg.Sessions {
		start += rng.ExpFloat64() * cfg.SessionGapMs
		sys := systems[rng.Intn(len(systems))]
		ctx := sys.tokens                        // tokens of context before this turn's user text
		full := append([]int64(nil), sys.ids...) // ids of the context's full blocks so far
		t := start
		turns := cfg.Turns.draw(rng)
		for k := range turns {
			if k > 0 {
				t += rng.ExpFloat64() * cfg.ThinkMs
			}
			in := ctx + cfg.UserTokens.draw(rng)
			out := cfg.OutputTokens.draw(rng)
			nfull := in / cfg.BlockTokens
			for len(full) < nfull {
				full = append(full, fresh())
			}
			ids := append([]int64(nil), full[:nfull]...)
			if in%cfg.BlockTokens != 0 {
				ids = append(ids, fresh())
			}
			rows = append(rows, TraceRow{TimestampMs: int64(t), InputLength: in, OutputLength: out, HashIDs: ids, Session: s, Turn: k})
			ctx = in + out
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.TimestampMs != b.TimestampMs {
			return a.TimestampMs < b.TimestampMs
		}
		if a.Session != b.Session {
			return a.Session < b.Session
		}
		return a.Turn < b.Turn
	})
	return rows, nil
}

// WriteJSONL writes rows as a Mooncake trace: one JSON object a line with timestamp,
// input_length, output_length and hash_ids.
func WriteJSONL(w io.Writer, rows []TraceRow) error {
	bw := bufio.NewWriter(w)
	for _, r := range rows {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		bw.Write(b)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}
