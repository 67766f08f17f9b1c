package dataplane

import "fmt"

// EffectKind names an effect the engine asked its driver for.
type EffectKind uint8

// Effects recorded by Recorder.
const (
	FxRunBatch EffectKind = iota + 1
	FxTransfer
	FxSetTimer
	FxFinish
)

func (k EffectKind) String() string {
	switch k {
	case FxRunBatch:
		return "run"
	case FxTransfer:
		return "transfer"
	case FxSetTimer:
		return "timer"
	case FxFinish:
		return "finish"
	}
	return "unknown"
}

// Effect is one recorded effect.
type Effect struct {
	Kind     EffectKind
	Now      Time
	Worker   WorkerID
	Batch    BatchID
	Hop      int
	Stage    StageID
	Size     int
	Nominal  Time
	From, To ServerID
	Bytes    int64
	At       Time
	Key      int64
	Req      ReqID
	Outcome  Outcome
	Reason   DropReason
}

func (e Effect) String() string {
	switch e.Kind {
	case FxRunBatch:
		return fmt.Sprintf("t=%d run batch %d hop %d (%d reqs) on worker %d for %d", e.Now, e.Batch, e.Hop, e.Size, e.Worker, e.Nominal)
	case FxTransfer:
		return fmt.Sprintf("t=%d transfer batch %d hop %d server %d→%d for %d", e.Now, e.Batch, e.Hop, e.From, e.To, e.Nominal)
	case FxSetTimer:
		return fmt.Sprintf("timer %d at %d", e.Key, e.At)
	case FxFinish:
		if e.Outcome == Dropped {
			return fmt.Sprintf("t=%d request %d dropped (%s)", e.Now, e.Req, e.Reason)
		}
		return fmt.Sprintf("t=%d request %d %s", e.Now, e.Req, e.Outcome)
	}
	return "?"
}

// Recorder is an Effects implementation that only records what it is asked to do: the
// harness for driving an engine by hand in tests (deliver the completions yourself, with any
// timing you like) and for checking what a driver would have been told.
type Recorder struct {
	Effects []Effect
}

// RunBatch implements Effects.
func (r *Recorder) RunBatch(now Time, w WorkerID, b BatchID, hop int, stage StageID, size int, nominal Time) {
	r.Effects = append(r.Effects, Effect{Kind: FxRunBatch, Now: now, Worker: w, Batch: b, Hop: hop, Stage: stage, Size: size, Nominal: nominal})
}

// Transfer implements Effects.
func (r *Recorder) Transfer(now Time, b BatchID, hop int, from, to ServerID, bytes int64, nominal Time) {
	r.Effects = append(r.Effects, Effect{Kind: FxTransfer, Now: now, Batch: b, Hop: hop, From: from, To: to, Bytes: bytes, Nominal: nominal})
}

// SetTimer implements Effects.
func (r *Recorder) SetTimer(at Time, key int64) {
	r.Effects = append(r.Effects, Effect{Kind: FxSetTimer, At: at, Key: key})
}

// Finish implements Effects.
func (r *Recorder) Finish(now Time, q *Request) {
	r.Effects = append(r.Effects, Effect{Kind: FxFinish, Now: now, Req: q.ID, Outcome: q.Outcome, Reason: q.Reason()})
}

// Take returns the effects recorded since the last Take and forgets them.
func (r *Recorder) Take() []Effect {
	out := r.Effects
	r.Effects = nil
	return out
}
