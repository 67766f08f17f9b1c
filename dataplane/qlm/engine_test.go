package qlm

import (
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
)

// ruleProfile has round numbers for hand-computed schedules: a step containing prompt tokens
// over n scheduled tokens takes P(n) = 1000 + 10·n µs, a decode-only step over b tokens
// D(b) = 5000 + 10·(b − 1) µs; no per-context-token term; vLLM's defaults otherwise (A100:
// 2048 tokens, 256 sequences), one-step output delay.
func ruleProfile(e formats.LLMEngine, kv int64) formats.LLMProfile {
	p := handProfile()
	p.KVCapacityTokens = kv
	p.Iteration = &formats.LLMIteration{
		Prefill: []formats.PWLPoint{{Tokens: 1, Us: 1010}, {Tokens: 1001, Us: 11010}},
		Decode:  []formats.PWLPoint{{Tokens: 1, Us: 5000}, {Tokens: 101, Us: 6000}},
	}
	p.Engine = &e
	return p
}

// TestEngineRules checks each rule of the LLM engine digest §2 on a schedule computed by
// hand. Times are from each request's arrival; every step of an idle
// instance starts 1 µs after the arrivals (the arrival hold).
func TestEngineRules(t *testing.T) {
	off := false
	type want struct{ ttft, done dataplane.Time }
	for _, tc := range []struct {
		name   string
		engine formats.LLMEngine
		kv     int64
		reqs   []engineReq
		want   []want
		// prefills is the count of steps holding prompt tokens; evictions of preemptions.
		prefills, evictions, swaps int64
		dropped                    map[dataplane.ReqID]dataplane.DropReason
	}{
		{
			// R (10 prompt, 20 out) runs; L (7,436 prompt) arrives during R's prefill. At
			// B = 1,024 every step is R's decode (1) + a chunk of L (1,023): 7 chunks of 1,023
			// and one of 275 (8 chunks), P(1024) = 11,240, P(276) = 3,760.
			// s1 R prefill P(10) 1→1,101; s2–s8 end 1,101 + 7·11,240 = 79,781; s9 end 83,541
			// (L's first token); s10 R + L decode D(2) = 5,010 → 88,551 (L's first token
			// stamped, L's last computed); s11 R alone → 93,551 (L done); R's first token
			// (s1) is stamped at s2's end 12,341; R's 20th token at s20 = 93,551 + 9·5,000 =
			// 138,551, stamped at the end of the idle instance's output-only step D(1) →
			// 143,551 (llm.Engine.OutputStep). L's times are from its arrival (1,000).
			name: "long prompt chunked while decodes proceed", engine: formats.LLMEngine{MaxNumBatchedTokens: 1024}, kv: 100000,
			reqs:     []engineReq{{0, 10, 20, 0}, {1000, 7436, 2, 0}},
			want:     []want{{12341, 143551}, {88551 - 1000, 93551 - 1000}},
			prefills: 9,
		},
		{
			// Chunked prefill off, B = 1,024: A (1,000) is admitted whole; B (1,000) does not
			// fit the 24 left and C (10) does not jump it. s1 A P(1000) 1→11,001; s2 A decode
			// + B + C = 1,011 tokens P(1011) → 22,111 (A done computing); s3 B, C decode
			// D(2) → 27,121; idle: the output-only step D(2) → 32,131 stamps B and C.
			name: "short prompt waits behind long (chunked off)", engine: formats.LLMEngine{MaxNumBatchedTokens: 1024, EnableChunkedPrefill: &off}, kv: 100000,
			reqs:     []engineReq{{0, 1000, 2, 0}, {0, 1000, 2, 0}, {0, 10, 2, 0}},
			want:     []want{{22111, 27121}, {27121, 32131}, {27121, 32131}},
			prefills: 2,
		},
		{
			// KV for 1,100 tokens: A (1,000 prompt, 50 out) holds 1,008; B (1,000) cannot
			// get its blocks and C (10), which could, waits behind it. s1 A 1→11,001; s2–s50
			// A decodes D(1) = 5,000 → 256,001 (A's first token stamped at s2 = 16,001);
			// s51 B + C prefill P(1010) = 11,100 → 267,101 (A done); s52 D(2) → 272,111;
			// the output-only step D(2) → 277,121 stamps B's and C's last tokens.
			name: "short prompt waits behind one without KV", engine: formats.LLMEngine{}, kv: 1100,
			reqs:     []engineReq{{0, 1000, 50, 0}, {0, 1000, 2, 0}, {0, 10, 2, 0}},
			want:     []want{{16001, 267101}, {272111, 277121}, {272111, 277121}},
			prefills: 2,
		},
		{
			// KV for 64 tokens in blocks of 16: A, B, C (16 prompt each; out 2, 3, 2) fill
			// 48 in s1 (P(48) 1→1,481). In s2 A grows to 32 (64 used), B's growth preempts C,
			// the youngest (recompute): D(2) → 6,491, A done computing, every first token
			// stamped. s3 B decodes and C recomputes 17 tokens: P(18) = 1,180 → 7,671 (A
			// stamped); idle: the output-only step D(2) → 12,681 stamps B and C. (Preempting B
			// instead would compute B's last token at 12,661.)
			name: "preemption frees the youngest", engine: formats.LLMEngine{}, kv: 64,
			reqs:      []engineReq{{0, 16, 2, 0}, {0, 16, 3, 0}, {0, 16, 2, 0}},
			want:      []want{{6491, 7671}, {6491, 12681}, {6491, 12681}},
			prefills:  2,
			evictions: 1,
		},
		{
			// Chunked prefill off: a prompt over B is refused at arrival; max_model_len 1,200
			// refuses 1,000 + 300. The third runs alone: P(100) 1→2,001, D(1) → 7,001 (first
			// token stamped), the output-only step D(1) → 12,001 (last).
			name: "refused at arrival", engine: formats.LLMEngine{MaxNumBatchedTokens: 1024, EnableChunkedPrefill: &off, MaxModelLen: 1200}, kv: 100000,
			reqs:     []engineReq{{0, 1100, 2, 0}, {0, 1000, 300, 0}, {0, 100, 2, 0}},
			want:     []want{{0, 0}, {0, 0}, {7001, 12001}},
			prefills: 1,
			dropped:  map[dataplane.ReqID]dataplane.DropReason{0: DropPromptBudget, 1: DropMaxModelLen},
		},
		{
			// As "preemption frees the youngest" with swap_space 1 GiB: C's KV goes to CPU
			// memory (kept computed) instead of being recomputed. s3 (6,491) swaps C back in
			// (ready after 17·131,072 B at 25 GB/s = 90 µs) and runs B alone: D(1) → 11,491
			// (B done computing, A's completion stamped); s4 C decodes → 16,491 (B stamped);
			// idle: the output-only step D(1) → 21,491 stamps C.
			name: "preemption swaps with swap_space", engine: formats.LLMEngine{SwapSpace: 1}, kv: 64,
			reqs:     []engineReq{{0, 16, 2, 0}, {0, 16, 3, 0}, {0, 16, 2, 0}},
			want:     []want{{6491, 11491}, {6491, 16491}, {6491, 21491}},
			prefills: 1,
			swaps:    1,
		},
		{
			// max_num_partial_prefills 1 (the default), budget 100: A (150/2) takes the whole
			// budget; B waits while A is mid-prompt. s1 A 100, P(100) 1→2,001; s2 A 50 + B 50
			// → 4,001 (A's first token); s3 A decode + B 99 → 6,001 (A's first stamped; A done
			// computing); s4 B's last prompt token, P(1) → 7,011 (A done stamped); s5 B decode,
			// D(1) → 12,011 (B's first token stamped); the output-only step D(1) → 17,011 (B's
			// last).
			name: "one partial prefill", engine: formats.LLMEngine{MaxNumBatchedTokens: 100}, kv: 100000,
			reqs:     []engineReq{{0, 150, 2, 0}, {0, 150, 2, 0}},
			want:     []want{{6001, 7011}, {12011, 17011}},
			prefills: 4,
		},
		{
			// max_num_partial_prefills 2: the budget splits between the two prefills
			// (100 / 2 = 50 each, vLLM's partial_prefill_budget_lookup_list). s1, s2, s3: A 50
			// + B 50, P(100) each → 2,001, 4,001, 6,001 (both first tokens); s4 both decode,
			// D(2) = 5,010 → 11,011: both first tokens stamped; the output-only step D(2) →
			// 16,021: both last.
			name: "two partial prefills", engine: formats.LLMEngine{MaxNumBatchedTokens: 100, MaxNumPartialPrefills: 2}, kv: 100000,
			reqs:     []engineReq{{0, 150, 2, 0}, {0, 150, 2, 0}},
			want:     []want{{11011, 16021}, {11011, 16021}},
			prefills: 3,
		},
		{
			// scheduling_policy priority, one sequence slot: A (prio 0) runs; B (prio 5,
			// at 10) and C (prio 1, at 20) wait; C goes first. s1 A P(100) 1→2,001; s2 A
			// decode → 7,001; s3 C P(100) → 9,001; s4 C decode → 14,001; s5 B → 16,001; s6 B
			// decode → 21,001; the output-only step → 26,001 (B's last). From arrival: B
			// 20,991 and 25,991, C 13,981 and 15,981.
			name: "priority scheduling", engine: formats.LLMEngine{MaxNumSeqs: 1, SchedulingPolicy: "priority"}, kv: 100000,
			reqs:     []engineReq{{0, 100, 2, 0}, {10, 100, 2, 5}, {20, 100, 2, 1}},
			want:     []want{{7001, 9001}, {20991, 25991}, {13981, 15981}},
			prefills: 3,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runEngine(t, PolicyFCFS, ruleProfile(tc.engine, tc.kv), tc.reqs)
			for id, w := range tc.want {
				id := dataplane.ReqID(id)
				if why, ok := tc.dropped[id]; ok {
					if r.reason[id] != why {
						t.Errorf("request %d: dropped %q, want %q", id, r.reason[id], why)
					}
					continue
				}
				if r.first[id] != w.ttft || r.done[id] != w.done {
					t.Errorf("request %d: ttft %d done %d, want %d %d", id, r.first[id], r.done[id], w.ttft, w.done)
				}
			}
			if r.st.Prefills != tc.prefills || r.st.Evictions != tc.evictions || r.st.KVSwaps != tc.swaps {
				t.Errorf("prefill steps %d evictions %d swaps %d, want %d %d %d", r.st.Prefills, r.st.Evictions, r.st.KVSwaps, tc.prefills, tc.evictions, tc.swaps)
			}
		})
	}
}

// TestCurveAsMeasured: measured curves are used as measured between points, even where they
// fall, and never fall past the last point (the last segment's slope clamped at ≥ 0).
func TestCurveAsMeasured(t *testing.T) {
	c := pwl{{Tokens: 1, Us: 100}, {Tokens: 11, Us: 200}, {Tokens: 21, Us: 150}}
	for _, tc := range []struct {
		x    int
		want float64
	}{
		{0, 100}, {1, 100}, {6, 150}, {11, 200}, {16, 175}, {21, 150},
		{1000, 150}, // the last segment falls: flat past the last point
	} {
		if got := c.At(tc.x); got != tc.want {
			t.Errorf("at(%d) = %g, want %g", tc.x, got, tc.want)
		}
	}
	up := pwl{{Tokens: 1, Us: 100}, {Tokens: 11, Us: 200}}
	if got := up.At(31); got != 400 {
		t.Errorf("rising curve at 31 = %g, want 400 (the last segment's slope)", got)
	}
}

// TestCancelDuringOutputDelay: a request whose last token is computed but not yet at its
// client (the one-step output delay) and is then cancelled ends cancelled, with no
// completion after its drop, and the other request completes; every policy.
func TestCancelDuringOutputDelay(t *testing.T) {
	dep := cancelDeployment(t)
	for _, ps := range Policies() {
		t.Run(ps.Name, func(t *testing.T) {
			pol, err := Registry().New(dep, dataplane.Config{Policy: ps.Name}, PolicyQLM)
			if err != nil {
				t.Fatal(err)
			}
			d := &stepDriver{starts: map[dataplane.ReqID][]dataplane.Time{}}
			eng, err := dataplane.NewEngine(dep, pol, d)
			if err != nil {
				t.Fatal(err)
			}
			d.eng = eng
			a, err := eng.Admit(0, dataplane.Arrival{App: 0, Attrs: dataplane.Attrs{InTokens: 100, OutTokens: 1}})
			if err != nil {
				t.Fatal(err)
			}
			b, err := eng.Admit(0, dataplane.Arrival{App: 0, Attrs: dataplane.Attrs{InTokens: 100, OutTokens: 5}})
			if err != nil {
				t.Fatal(err)
			}
			// Run to the end of the first step that computed a's only token.
			for pol.(*Policy).seqs[a] == nil || !pol.(*Policy).seqs[a].Fin {
				if _, ok := d.next(t); !ok {
					t.Fatal("a never computed its token")
				}
			}
			if eng.Req(a).Outcome != dataplane.Pending {
				t.Fatalf("a is %v before its output delay ended", eng.Req(a).Outcome)
			}
			if ok, err := eng.Cancel(d.now, a); err != nil || !ok {
				t.Fatalf("cancel: %v %v", ok, err)
			}
			d.untilIdle(t, 10*dataplane.Second)
			if r := eng.Req(a); r.Outcome != dataplane.Dropped || r.Reason() != dataplane.DropCancelled {
				t.Errorf("a: %v %q, want dropped as cancelled", r.Outcome, r.Reason())
			}
			if r := eng.Req(b); r.Outcome != dataplane.Completed {
				t.Errorf("b: %v, want completed", r.Outcome)
			}
		})
	}
}
