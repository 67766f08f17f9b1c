package llm_test

import (
	"math"
	"slices"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/formats"
)

// disaggFlat is flatProfile (prefill steps 2,000 µs, decode steps 1,000 µs, budget 64, KV
// for 160 tokens, no output delay) with 1,000 KV bytes per token: over a 1 GB/s link (1,000
// bytes/µs) a prompt of n tokens moves in n µs + the 10 µs latency.
func disaggFlat() *llm.Model {
	p := flatProfile(formats.LLMEngine{})
	p.KVBytesPerToken = 1000
	return llm.NewModel(p)
}

func TestDisaggOneRequest(t *testing.T) {
	m := disaggFlat()
	res, st, err := llm.ReplayDisagg(llm.Disagg{Prefill: m, Decode: m, P: 1, D: 1, LinkGBps: 1},
		[]llm.Request{{ID: 1, Prompt: 64, Out: 3}})
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	// Arrival hold 1 µs, one prefill step of 2,000 µs (64 tokens, the budget) computes the
	// first token at 2,001; 64 × 1,000 bytes at 1,000 bytes/µs + 10 µs lands at 2,075: TTFT
	// = prefill + transfer. Then the decode instance's hold (1 µs) and two decode steps.
	if r.Prefilled != 2001 || r.Landed != 2075 || r.FirstToken != 2075 || r.Done != 2076+2000 {
		t.Fatalf("got prefilled %d landed %d first %d done %d; want 2001 2075 2075 4076", r.Prefilled, r.Landed, r.FirstToken, r.Done)
	}
	if st.Transfers != 1 || st.TransferUs != 74 || st.WaitUs != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestDisaggDecodeKVContention(t *testing.T) {
	m := disaggFlat()
	// Two prompts of 100 tokens (2 chunks: 64, 36) on two prefill instances, both prefilled
	// at 4,001. One decode instance of 160 KV tokens: each needs blocks(101) = 112, so B's
	// transfer waits until A finishes. A: transfer 100 + 10 → lands 4,111; hold; decodes at
	// 4,112, 5,112, 6,112 → done 7,112, blocks free. B's transfer starts at 7,112 → lands
	// 7,222 (TTFT), decodes → 10,223.
	reqs := []llm.Request{{ID: 1, Prompt: 100, Out: 4}, {ID: 2, Prompt: 100, Out: 4}}
	res, st, err := llm.ReplayDisagg(llm.Disagg{Prefill: m, Decode: m, P: 2, D: 1, LinkGBps: 1}, reqs)
	if err != nil {
		t.Fatal(err)
	}
	want := [][4]dataplane.Time{{4001, 4111, 4111, 7112}, {4001, 7222, 7222, 10223}}
	for i, r := range res {
		got := [4]dataplane.Time{r.Prefilled, r.Landed, r.FirstToken, r.Done}
		if got != want[i] || r.Refused {
			t.Errorf("request %d: got %v refused %v, want %v", i, got, r.Refused, want[i])
		}
	}
	if st.WaitUs != 7112-4001 || st.Transfers != 2 {
		t.Errorf("stats %+v: want wait %d", st, 7112-4001)
	}
}

func TestDisaggOneTokenAndRefusal(t *testing.T) {
	m := disaggFlat()
	res, st, err := llm.ReplayDisagg(llm.Disagg{Prefill: m, Decode: m, P: 1, D: 1, LinkGBps: 1},
		[]llm.Request{{ID: 1, Prompt: 10, Out: 1}, {ID: 2, Arrival: 5000, Prompt: 150, Out: 20}})
	if err != nil {
		t.Fatal(err)
	}
	// One token: answered by the prefill instance at the end of its step, no transfer.
	if r := res[0]; r.FirstToken != 2001 || r.Done != 2001 || r.Landed != 0 {
		t.Errorf("one-token request: %+v", r)
	}
	// 150 + 20 tokens exceed the decode instance's 160: refused at arrival.
	if !res[1].Refused || st.Transfers != 0 {
		t.Errorf("oversized request not refused: %+v, %d transfers", res[1], st.Transfers)
	}
}

func TestDisaggBadInput(t *testing.T) {
	m := disaggFlat()
	noKV := *m
	noKV.KVBytes = 0
	other := *m
	other.Name = "other"
	for _, c := range []struct {
		name string
		d    llm.Disagg
	}{
		{"link 0", llm.Disagg{Prefill: m, Decode: m, P: 1, D: 1}},
		{"link NaN", llm.Disagg{Prefill: m, Decode: m, P: 1, D: 1, LinkGBps: math.NaN()}},
		{"no decode", llm.Disagg{Prefill: m, Decode: m, P: 1, D: 0, LinkGBps: 1}},
		{"no kv bytes", llm.Disagg{Prefill: &noKV, Decode: &noKV, P: 1, D: 1, LinkGBps: 1}},
		{"two models", llm.Disagg{Prefill: m, Decode: &other, P: 1, D: 1, LinkGBps: 1}},
	} {
		if _, _, err := llm.ReplayDisagg(c.d, []llm.Request{{ID: 1, Prompt: 8, Out: 2}}); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
}

// TestDisaggDeterministic: the same inputs give the same results.
func TestDisaggDeterministic(t *testing.T) {
	pre, dec := longProfiles()
	reqs := poisson(7, 200, 1.2, 8000, 200)
	a, _, _ := llm.ReplayDisaggProfiles(pre, dec, 1, 1, 50, reqs)
	b, _, _ := llm.ReplayDisaggProfiles(pre, dec, 1, 1, 50, reqs)
	if !slices.Equal(a, b) {
		t.Fatal("two runs differ")
	}
}
