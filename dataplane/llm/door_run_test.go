package llm

import (
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// TestReplayWorkBounded: the admission judge's replay of a queue does work in proportion to
// the batch's changes (admissions, prompts computed, completions), not to its steps: a
// 16-token step budget against 4,200-token prompts is 263 steps a prompt, which stepped one
// by one through the replay's loop at every arrival made an overloaded engine quadratic.
func TestReplayWorkBounded(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		batched, seqs, prompts   int
		prompt, out, decodeAlong int
	}{
		{"16-token budget, 4200-token prompts", 16, 256, 100, 4200, 10, 0},
		{"16-token budget beside decodes", 16, 256, 50, 4200, 10, 4},
		{"default budget", 2048, 256, 100, 4200, 10, 0},
		{"one sequence at a time", 16, 1, 40, 4200, 300, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := doorModel(tc.seqs, tc.batched, 1<<30, 1)
			var st rstate
			st.reset()
			for i := range tc.decodeAlong {
				st.admit(pseq{left: 1000 + i, ctx: 100, reserve: 1200, idx: 1000 + i}, false)
			}
			q := make([]pseq, tc.prompts)
			for i := range q {
				q[i] = pseq{need: tc.prompt, left: tc.out, reserve: tc.prompt + tc.out, idx: i}
			}
			done := 0
			st.advance(m, 1, q, false, func(_ int, _, _, _ dataplane.Time) { done++ })
			if done != tc.prompts+tc.decodeAlong {
				t.Fatalf("%d completions, want %d", done, tc.prompts+tc.decodeAlong)
			}
			// Per sequence: its admission, its chunks' run, its last chunk, its decode
			// run and its completion, each a few iterations at most.
			if most := 8 * (tc.prompts + tc.decodeAlong); st.loops > most {
				t.Errorf("%d iterations for %d sequences, want at most %d", st.loops, tc.prompts+tc.decodeAlong, most)
			}
		})
	}
}
