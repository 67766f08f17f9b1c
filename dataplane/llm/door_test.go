package llm

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
)

// doorModel is a model with a per-context step cost (so the mean-context jumps matter) and
// the given budgets; batched small enough makes a batch's decodes fill the token budget.
func doorModel(seqs, batched, kv, delay int) *Model {
	return NewModel(&formats.LLMProfile{Model: "m", GPU: "A100", KVCapacityTokens: int64(kv), KVBytesPerToken: 1,
		Iteration: &formats.LLMIteration{
			Prefill:                 []formats.PWLPoint{{Tokens: 1, Us: 1000}, {Tokens: 1000, Us: 11000}, {Tokens: 4000, Us: 50000}},
			Decode:                  []formats.PWLPoint{{Tokens: 1, Us: 5000}, {Tokens: 4, Us: 8000}, {Tokens: 64, Us: 20000}},
			DecodeUsPerContextToken: 0.01,
		},
		Engine: &formats.LLMEngine{MaxNumSeqs: seqs, MaxNumBatchedTokens: batched, OutputDelaySteps: &delay}})
}

// doorState draws an engine state: running sequences mid-prompt, decoding or with a step in
// flight, swapped ones, a waiting queue; deadlines around now, some absent.
func doorState(r *rand.Rand, now dataplane.Time) (*Engine, []*Seq) {
	id := dataplane.ReqID(1)
	seq := func() *Seq {
		s := &Seq{ID: id, Prompt: 1 + r.IntN(3000), Out: 1 + r.IntN(400), Arrival: now - dataplane.Time(r.IntN(5e6))}
		id++
		if r.IntN(5) > 0 {
			s.Deadline = now + dataplane.Time(r.IntN(20e6)) - 2e6
			if s.Deadline <= s.Arrival {
				s.Deadline = s.Arrival + 1
			}
		}
		return s
	}
	e := &Engine{}
	for range r.IntN(40) {
		s := seq()
		s.Gen = r.IntN(s.Out + 1)
		s.Comp = min(s.Prompt+s.Gen, r.IntN(s.Prompt+s.Gen+2))
		if r.IntN(3) == 0 {
			s.Sched = r.IntN(s.Prompt + s.Gen - s.Comp + 1)
		}
		s.KV = s.Comp + r.IntN(64)
		s.Fin = r.IntN(20) == 0
		e.running = append(e.running, s)
	}
	for range r.IntN(4) {
		s := seq()
		s.Gen, s.Comp, s.Swapped = r.IntN(s.Out), 0, true
		s.Fin = r.IntN(20) == 0
		e.swapped = append(e.swapped, s)
	}
	var waiting []*Seq
	for range r.IntN(60) {
		s := seq()
		if r.IntN(4) == 0 {
			s.Gen = r.IntN(s.Out) // preempted (recompute) after some tokens
		}
		waiting = append(waiting, s)
	}
	return e, waiting
}

func doorArrival(r *rand.Rand, now dataplane.Time) Arrival {
	a := Arrival{Prompt: 1 + r.IntN(3000), Out: r.IntN(400), SLO: dataplane.Time(1 + r.IntN(30e6)), Now: now,
		Busy: dataplane.Time(r.IntN(3) * r.IntN(50000)), Pace: 1 + float64(r.IntN(3))*0.25*float64(r.IntN(2)),
		Headroom: 0.05 * float64(r.IntN(3)), Guarded: r.IntN(2) == 0}
	if r.IntN(4) == 0 {
		a.TTFTSLO = dataplane.Time(1 + r.IntN(5e6))
	}
	if r.IntN(2) == 0 {
		cut := now + dataplane.Time(r.IntN(20e6))
		a.Yields = func(s *Seq) bool { return s.Deadline > cut }
	}
	return a
}

func doorModels(r *rand.Rand) *Model {
	return doorModel(1+r.IntN(64), []int{32, 512, 2048, 8192}[r.IntN(4)], []int{2000, 20000, 200000, 2000000}[r.IntN(4)], r.IntN(3))
}

// TestDoorMatchesFullReplay: Judge and a Door reused across arrivals give the verdicts of
// the full replay (refJudge, the implementation before the checkpoint and the decode heap)
// on seeded random states: engines mid-step, swapped and preempted sequences, yields, pace,
// headroom, the guard, TTFT SLOs, decodes that fill the token budget; the Door sees queues
// that grow at the end (its checkpoint extended), engines that move (rebuilt), queues
// reordered and other engines.
func TestDoorMatchesFullReplay(t *testing.T) {
	var late, harms, onTime, ttft int
	defer func() {
		// The draws must reach every branch of the verdict.
		t.Logf("%d late (%d harming, %d by TTFT), %d on time", late, harms, ttft, onTime)
		if late == 0 || harms == 0 || onTime == 0 || ttft == 0 {
			t.Errorf("verdicts: %d late, %d harming, %d by TTFT, %d on time: want some of each", late, harms, ttft, onTime)
		}
	}()
	for seed := range uint64(200) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			now := dataplane.Time(100e6)
			m := doorModels(r)
			e, waiting := doorState(r, now)
			e2, waiting2 := doorState(r, now)
			var d Door
			next := dataplane.ReqID(1000)
			for i := range 30 {
				a := doorArrival(r, now)
				eng, w := e, waiting
				if r.IntN(8) == 0 {
					eng, w = e2, waiting2 // another engine: the Door starts over
				}
				want := refJudge(m, eng, w, a)
				switch {
				case want.Harms > 0:
					harms++
				case want.Late && a.TTFTSLO > 0 && want.TTFT > a.TTFTSLO:
					ttft++
				}
				if want.Late {
					late++
				} else {
					onTime++
				}
				if got := Judge(m, eng, w, a); got != want {
					t.Fatalf("arrival %d: Judge %+v, full replay %+v", i, got, want)
				}
				if got := d.Judge(m, eng, w, a); got != want {
					t.Fatalf("arrival %d: Door %+v, full replay %+v", i, got, want)
				}
				if got := Predict(m, eng, w, a); got != want.Prediction {
					t.Fatalf("arrival %d: Predict %+v, full replay %+v", i, got, want.Prediction)
				}
				now += dataplane.Time(r.IntN(20000))
				switch x := r.IntN(10); {
				case x < 6 && eng == e:
					// Admitted: it queues last (the door's usual case).
					s := &Seq{ID: next, Prompt: a.Prompt, Out: max(a.Out, 1), Arrival: a.Now, Deadline: a.Now + a.SLO}
					next++
					waiting = append(waiting, s)
				case x == 6 && len(waiting) > 1:
					// An earlier deadline queued ahead: the queue is reordered.
					j := r.IntN(len(waiting))
					waiting = append(waiting[:j:j], append([]*Seq{{ID: next, Prompt: a.Prompt, Out: 1 + a.Out, Arrival: a.Now}}, waiting[j:]...)...)
					next++
				case x == 7 && len(e.running) > 0:
					// The engine moved: a sequence generated a token.
					s := e.running[r.IntN(len(e.running))]
					s.Gen = min(s.Gen+1, s.Out)
					s.Comp = min(s.Comp+1, s.Prompt+s.Gen)
					e.ver++
				case x == 8:
					m = doorModels(r)
				}
			}
		})
	}
}

// BenchmarkDoor: judging arrivals one after another at an engine with a long queue, each
// admitted one queued last (a burst between two steps), against the full replay.
func BenchmarkDoor(b *testing.B) {
	m := doorModel(64, 2048, 200000, 1)
	mk := func() (*Engine, []*Seq) {
		e := &Engine{}
		for i := range 64 {
			e.running = append(e.running, &Seq{ID: dataplane.ReqID(i), Prompt: 500, Out: 300, Gen: i * 4, Comp: 500 + i*4, KV: 1000})
		}
		var w []*Seq
		for i := range 2000 {
			w = append(w, &Seq{ID: dataplane.ReqID(100 + i), Prompt: 500, Out: 100 + i%300, Arrival: 0, Deadline: 3600 * dataplane.Second})
		}
		return e, w
	}
	a := Arrival{Prompt: 500, Out: 250, SLO: 3600 * dataplane.Second, Now: dataplane.Second, Headroom: 0.05}
	for _, c := range []struct {
		name  string
		judge func(*Door, *Model, *Engine, []*Seq, Arrival) Verdict
	}{
		{"full", func(_ *Door, m *Model, e *Engine, w []*Seq, a Arrival) Verdict { return refJudge(m, e, w, a) }},
		{"judge", func(_ *Door, m *Model, e *Engine, w []*Seq, a Arrival) Verdict { return Judge(m, e, w, a) }},
		{"door", (*Door).Judge},
	} {
		b.Run(c.name, func(b *testing.B) {
			e, w := mk()
			var d Door
			n := 0
			for b.Loop() {
				c.judge(&d, m, e, w, a)
				w = append(w, &Seq{ID: dataplane.ReqID(10000 + n), Prompt: 500, Out: 250, Deadline: 3600 * dataplane.Second})
				n++
				if n%100 == 0 {
					w = w[:2000] // a step: the Door starts over
					e.ver++
				}
			}
		})
	}
}
