package llm

import (
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
)

// admitModel is a hand-computable engine: a prefill-containing step over n tokens takes
// P(n) = 1000 + 10000·(n−1)/999 µs (P(100) = 1991 rounded), a decode step 5000 µs whatever
// the batch up to 1 sequence and 1000 µs more per extra one up to 4, no per-context cost;
// max_num_seqs seqs, a KV cache of kv tokens (blocks of 16), an output delay of delay steps.
func admitModel(seqs, kv, delay int) *Model {
	return NewModel(&formats.LLMProfile{Model: "m", GPU: "A100", KVCapacityTokens: int64(kv), KVBytesPerToken: 1,
		Iteration: &formats.LLMIteration{
			Prefill: []formats.PWLPoint{{Tokens: 1, Us: 1000}, {Tokens: 1000, Us: 11000}},
			Decode:  []formats.PWLPoint{{Tokens: 1, Us: 5000}, {Tokens: 4, Us: 8000}},
		},
		Engine: &formats.LLMEngine{MaxNumSeqs: seqs, OutputDelaySteps: &delay}})
}

func TestJudge(t *testing.T) {
	const P100, D1 = 1991, 5000 // P(100) and a decode step of one sequence
	// decoding is a running sequence of 100 prompt tokens with 1 of its 11 output tokens
	// generated: 10 decode steps left, 112 tokens of KV at its peak (111 in blocks of 16).
	decoding := func() *Engine {
		return &Engine{running: []*Seq{{ID: 1, Prompt: 100, Out: 11, Gen: 1, Comp: 100, KV: 112, Started: true}}}
	}
	// tight is decoding() with a deadline 55 ms after now = 1 s: on time alone (10 decode
	// steps, 50 ms), late behind a 1,000-token prompt's step (P(1001) = 11,010 µs, then two
	// decode steps of two, 6,000 µs each, then 7 of one: 58,010 µs). The newcomer fits once
	// it is done: a wait of 50 ms.
	const now = dataplane.Second
	tight := func() *Engine {
		e := decoding()
		e.running[0].Arrival = now - 45*dataplane.Millisecond // a 100 ms SLO
		e.running[0].Deadline = now + 55*dataplane.Millisecond
		return e
	}
	queued := func(n, prompt, out int) []*Seq {
		var w []*Seq
		for i := range n {
			w = append(w, &Seq{ID: dataplane.ReqID(10 + i), Prompt: prompt, Out: out})
		}
		return w
	}
	for _, tc := range []struct {
		name           string
		m              *Model
		e              *Engine
		waiting        []*Seq
		a              Arrival
		ttft, e2e      dataplane.Time
		late           bool
		harms          int
		wait           dataplane.Time
		retryAfterSecs int64
	}{
		{name: "empty engine admits", m: admitModel(4, 100000, 0), e: &Engine{},
			a:    Arrival{Prompt: 100, Out: 3, SLO: dataplane.Second},
			ttft: P100, e2e: P100 + 2*D1},
		{name: "empty engine, one-step output delay", m: admitModel(4, 100000, 1), e: &Engine{},
			// Each token one decode step later; the last one by an output-only step.
			a:    Arrival{Prompt: 100, Out: 3, SLO: dataplane.Second},
			ttft: P100 + D1, e2e: P100 + 3*D1},
		{name: "a full batch: wait for its slot", m: admitModel(1, 100000, 0), e: decoding(),
			a:    Arrival{Prompt: 100, Out: 3, SLO: dataplane.Second},
			ttft: 10*D1 + P100, e2e: 10*D1 + P100 + 2*D1},
		{name: "a full KV cache: wait for its blocks", m: admitModel(4, 200, 0), e: decoding(),
			a:    Arrival{Prompt: 100, Out: 3, SLO: dataplane.Second},
			ttft: 10*D1 + P100, e2e: 10*D1 + P100 + 2*D1},
		{name: "the running sequence gives way", m: admitModel(1, 100000, 0), e: decoding(),
			a:    Arrival{Prompt: 100, Out: 3, SLO: dataplane.Second, Yields: func(*Seq) bool { return true }},
			ttft: P100, e2e: P100 + 2*D1},
		{name: "a queue pushes E2E past the SLO", m: admitModel(1, 100000, 0), e: &Engine{}, waiting: queued(2, 100, 300),
			// Three in turn, each P(100) + 299 decode steps = 1,496,991 µs.
			a:    Arrival{Prompt: 100, Out: 300, SLO: 2 * dataplane.Second},
			ttft: 2*(P100+299*D1) + P100, e2e: 3 * (P100 + 299*D1),
			late: true, wait: 3*(P100+299*D1) - 2*dataplane.Second, retryAfterSecs: 3},
		{name: "the same queue within a longer SLO", m: admitModel(1, 100000, 0), e: &Engine{}, waiting: queued(2, 100, 300),
			a:    Arrival{Prompt: 100, Out: 300, SLO: 5 * dataplane.Second},
			ttft: 2*(P100+299*D1) + P100, e2e: 3 * (P100 + 299*D1)},
		{name: "a TTFT SLO refuses what E2E admits", m: admitModel(1, 100000, 0), e: decoding(),
			a:    Arrival{Prompt: 100, Out: 3, SLO: dataplane.Second, TTFTSLO: 50 * dataplane.Millisecond},
			ttft: 10*D1 + P100, e2e: 10*D1 + P100 + 2*D1,
			late: true, wait: 10*D1 + P100 - 50*dataplane.Millisecond, retryAfterSecs: 1},
		{name: "batched decodes share the steps", m: admitModel(4, 100000, 0), e: &Engine{}, waiting: queued(1, 100, 3),
			// Both prompts in one step P(200) = 1000 + 10000·199/999 = 2992; two decode
			// steps of two sequences, 6000 µs each.
			a:    Arrival{Prompt: 100, Out: 3, SLO: dataplane.Second},
			ttft: 2992, e2e: 2992 + 2*6000},
		{name: "harming an admitted request refuses", m: admitModel(4, 100000, 0), e: tight(),
			a:    Arrival{Prompt: 1000, Out: 3, SLO: dataplane.Second, Now: now},
			ttft: 11010, e2e: 11010 + 2*6000,
			late: true, harms: 1, wait: 10 * D1, retryAfterSecs: 1},
		{name: "a guard that can hold it back admits", m: admitModel(4, 100000, 0), e: tight(),
			// 55 ms + its own 23 ms fit its 1 s: QLM's guard admits it after the tight one.
			a:    Arrival{Prompt: 1000, Out: 3, SLO: dataplane.Second, Now: now, Guarded: true},
			ttft: 11010, e2e: 11010 + 2*6000},
		{name: "a guard without room to wait refuses", m: admitModel(4, 100000, 0), e: tight(),
			a:    Arrival{Prompt: 1000, Out: 3, SLO: 60 * dataplane.Millisecond, Now: now, Guarded: true},
			ttft: 11010, e2e: 11010 + 2*6000,
			late: true, harms: 1, wait: 10 * D1, retryAfterSecs: 1},
		{name: "a guard does not hold back a request of the same SLO", m: admitModel(4, 100000, 0), e: tight(),
			a:    Arrival{Prompt: 1000, Out: 3, SLO: 100 * dataplane.Millisecond, Now: now, Guarded: true},
			ttft: 11010, e2e: 11010 + 2*6000,
			late: true, harms: 1, wait: 10 * D1, retryAfterSecs: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(tc.m, tc.e, tc.waiting, tc.a)
			if v.TTFT != tc.ttft || v.E2E != tc.e2e {
				t.Errorf("predicted TTFT %d E2E %d µs, want %d %d", v.TTFT, v.E2E, tc.ttft, tc.e2e)
			}
			if v.Late != tc.late || v.Wait != tc.wait || v.Harms != tc.harms {
				t.Errorf("late %v wait %d µs harms %d, want %v %d %d", v.Late, v.Wait, v.Harms, tc.late, tc.wait, tc.harms)
			}
			if tc.late {
				if got := RetryAfter(v.Wait); got != tc.retryAfterSecs {
					t.Errorf("Retry-After %d s, want %d (the wait %d µs rounded up)", got, tc.retryAfterSecs, v.Wait)
				}
			}
		})
	}
}

func TestRetryAfterRoundsUp(t *testing.T) {
	for _, tc := range []struct {
		wait dataplane.Time
		want int64
	}{{1, 1}, {dataplane.Second, 1}, {dataplane.Second + 1, 2}, {2490973, 3}, {0, 1}} {
		if got := RetryAfter(tc.wait); got != tc.want {
			t.Errorf("RetryAfter(%d µs) = %d, want %d", tc.wait, got, tc.want)
		}
	}
}
