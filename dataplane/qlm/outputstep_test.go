package qlm

import (
	"fmt"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
)

// TestTokenDeliveryIndependentOfMaxTokens: a lone request's tokens reach its client at the
// end of the step output_delay_steps after the one that computed them (LLM engine digest
// §2.5), whatever its max_tokens: the first-token stamp is the same for 1, 2, 3 and 256
// tokens, every token shows on its own (VisibleTokens grows by one per step), one decode
// step after the one before, and the last is stamped on its own step, not with the one
// before it (dataplane/llm/outputstep.go).
func TestTokenDeliveryIndependentOfMaxTokens(t *testing.T) {
	const (
		prompt = 100
		// ruleProfile: P(100) = 2,000 µs, D(1) = 5,000 µs, no context term; the step starts
		// 1 µs after the arrival (the arrival hold).
		prefill = 1 + 2000
		decode  = 5000
	)
	for _, delay := range []int{0, 1, 2} {
		ttft := dataplane.Time(prefill + delay*decode)
		for _, out := range []int{1, 2, 3, 256} {
			t.Run(fmt.Sprintf("delay=%d/max_tokens=%d", delay, out), func(t *testing.T) {
				d := delay
				prof := ruleProfile(formats.LLMEngine{OutputDelaySteps: &d}, 100000)
				cls := []llmspec.LLMClass{oneClass("m", time.Hour)}
				dep, err := Build(cls, Setup{Profiles: []formats.LLMProfile{prof}, Instances: []Instance{{Name: "i0", GPU: prof.GPU, Model: "m"}}})
				if err != nil {
					t.Fatal(err)
				}
				pol, err := Registry().New(dep, dataplane.Config{Policy: PolicyFCFS}, PolicyQLM)
				if err != nil {
					t.Fatal(err)
				}
				drv := &stepDriver{starts: map[dataplane.ReqID][]dataplane.Time{}}
				eng, err := dataplane.NewEngine(dep, pol, drv)
				if err != nil {
					t.Fatal(err)
				}
				drv.eng = eng
				id, err := eng.Admit(0, dataplane.Arrival{App: 0, Attrs: dataplane.Attrs{InTokens: prompt, OutTokens: int32(out)}})
				if err != nil {
					t.Fatal(err)
				}
				// at[i] is when token i+1 showed: what a streaming front end sends then.
				var at []dataplane.Time
				for eng.Req(id).Outcome == dataplane.Pending {
					if _, ok := drv.next(t); !ok {
						t.Fatal("the request never finished")
					}
					n, ok := pol.(*Policy).VisibleTokens(id)
					if !ok {
						n = out // answered: the answer carries every token
					}
					if n > len(at)+1 {
						t.Fatalf("at %d µs: %d tokens show at once (%d before)", drv.now, n-len(at), len(at))
					}
					if n > len(at) {
						at = append(at, drv.now)
					}
				}
				r := eng.Req(id)
				if len(at) != out {
					t.Fatalf("%d tokens showed, want %d", len(at), out)
				}
				if got := r.FirstToken - r.Arrival; got != ttft || at[0] != r.FirstToken {
					t.Errorf("first token stamped at %d µs (TTFT %d), shown at %d; want TTFT %d", r.FirstToken, got, at[0], ttft)
				}
				for i := 1; i < out; i++ {
					if at[i]-at[i-1] != decode {
						t.Fatalf("token %d showed %d µs after token %d, want one decode step (%d)", i+1, at[i]-at[i-1], i, decode)
					}
				}
				if r.Done != at[out-1] {
					t.Errorf("completed at %d µs, last token shown at %d", r.Done, at[out-1])
				}
			})
		}
	}
}
