package llm

import (
	"fmt"
	"slices"
)

// The engine's state as its owner and schedulers see it (the invariants are on Engine). The
// slices returned are the engine's own, read-only by contract and valid until the engine's
// next change: a step's passes over the batch read them in place, as they read the fields
// before, rather than a copy per call.

// Running are the admitted sequences, in admission order.
func (e *Engine) Running() []*Seq { return e.running }

// Swapped are the sequences whose KV is in CPU memory, in swap-out order.
func (e *Engine) Swapped() []*Seq { return e.swapped }

// KVUsed is the GPU KV cache held, in tokens of whole blocks.
func (e *Engine) KVUsed() int { return e.kvUsed }

// CPUUsed is the swapped sequences' KV in CPU memory, in bytes.
func (e *Engine) CPUUsed() int64 { return e.cpuUsed }

// Busy: an iteration is in flight (Step started it, Done has not ended it).
func (e *Engine) Busy() bool { return e.busy }

// Iter are the sequences of the iteration in flight (none when not Busy).
func (e *Engine) Iter() []*Seq { return e.iter }

// IterPrefill: the iteration in flight computes prompt (or recomputed) tokens.
func (e *Engine) IterPrefill() bool { return e.iterPrefill }

// Outputs are the tokens computed but not yet at their clients (the output delay, digest
// §2.5), in the order they were computed.
func (e *Engine) Outputs() []Output { return e.outq }

// Place puts s at the end of the running batch with the KV it holds (s.KV, tokens of whole
// blocks), as though admitted earlier: for an owner that sets an engine up in a given state
// (a test's scenario) without replaying the steps that built it. s keeps its own fields;
// the engine's lists, its KV and its version change. It panics when the engine holds s
// already, when s is marked swapped out, or when the engine has a prefix cache (whose pool
// would not know s's blocks).
func (e *Engine) Place(s *Seq) {
	switch {
	case e.apc != nil:
		panic("llm: Place on an engine with a prefix cache")
	case s.Swapped:
		panic(fmt.Sprintf("llm: Place of request %d, marked swapped out", s.ID))
	case slices.Contains(e.running, s) || slices.Contains(e.swapped, s):
		panic(fmt.Sprintf("llm: Place of request %d, held by engine %d already", s.ID, e.ID))
	}
	e.ver++
	e.running = append(e.running, s)
	e.kvUsed += s.KV
}

// Check reports the first invariant of the engine's state (Engine) that does not hold, for
// m its model (nil: the block size is not checked). Nil when all
// hold. Tests call it after every change; the engine itself does not (a pass over the batch
// per call).
func (e *Engine) Check(m *Model) error {
	seen := make(map[*Seq]bool, len(e.running)+len(e.swapped))
	held := 0
	for _, s := range e.running {
		switch {
		case seen[s]:
			return fmt.Errorf("request %d is running twice", s.ID)
		case s.Swapped:
			return fmt.Errorf("running request %d is marked swapped out", s.ID)
		case s.KV < 0 || (m != nil && s.KV%m.Block != 0):
			return fmt.Errorf("running request %d holds %d KV tokens: not whole blocks", s.ID, s.KV)
		case s.swapBytes != 0:
			return fmt.Errorf("running request %d keeps %d bytes of swapped KV", s.ID, s.swapBytes)
		}
		seen[s] = true
		held += s.KV
	}
	var cpu int64
	for _, s := range e.swapped {
		switch {
		case seen[s]:
			return fmt.Errorf("swapped request %d is also running or swapped twice", s.ID)
		case !s.Swapped:
			return fmt.Errorf("swapped request %d is not marked swapped out", s.ID)
		}
		seen[s] = true
		cpu += s.swapBytes
	}
	if cpu != e.cpuUsed {
		return fmt.Errorf("CPU KV %d bytes, the swapped requests hold %d", e.cpuUsed, cpu)
	}
	if err := e.checkKV(m, held); err != nil {
		return err
	}
	switch {
	case !e.busy && len(e.iter) > 0:
		return fmt.Errorf("idle with %d sequences in its iteration", len(e.iter))
	case e.busy && e.outEnd != 0:
		return fmt.Errorf("an output-only step (to %d) in flight beside a real one", e.outEnd)
	}
	return nil
}

// checkKV checks the GPU KV count against held, the KV the running sequences hold.
func (e *Engine) checkKV(m *Model, held int) error {
	if m != nil && (e.kvUsed%m.Block != 0 || e.kvUsed > m.KVCap) {
		return fmt.Errorf("KV used %d: not whole blocks of %d within the cache's %d", e.kvUsed, m.Block, m.KVCap)
	}
	if e.apc == nil {
		if e.kvUsed != held {
			return fmt.Errorf("KV used %d, the running requests hold %d", e.kvUsed, held)
		}
		return nil
	}
	// With a prefix cache a block several requests share counts once: the pool's count is
	// the truth, and each request holds what the pool says it does.
	b := e.apc.BlockSize()
	if e.kvUsed != e.apc.NumUsed()*b || e.kvUsed > held {
		return fmt.Errorf("KV used %d, the pool's blocks in use %d, the running requests hold %d", e.kvUsed, e.apc.NumUsed()*b, held)
	}
	for _, s := range e.running {
		if s.KV != e.apc.Held(int64(s.ID))*b {
			return fmt.Errorf("running request %d holds %d KV tokens, the pool %d", s.ID, s.KV, e.apc.Held(int64(s.ID))*b)
		}
	}
	return nil
}
