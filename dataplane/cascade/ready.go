package cascade

import (
	"math/bits"

	"github.com/plan-dev/plan/dataplane"
)

// After every batch, CascadeServe's per-GPU batching (§4.5: a replica runs when its queue
// reaches the gear's trigger and its GPUs are free) tries every GPU in index order: a scan
// whose cost grows with the GPUs. Trying a GPU that cannot start anything
// does nothing, and starting a batch only makes other GPUs less ready, so trying, in the same
// order, only the GPUs that may have become ready since they were last found idle makes the
// same decisions. A GPU may become ready when a replica on it gets a request (push), stops
// running or is freed with its GPUs (batchDone), or when a queue's head has waited a poll
// interval (trigger's timeout: an aging heap keyed by head arrival + poll); loads, returns
// from failure, gear changes and failures try the GPUs themselves (kick, the tick's and
// workerDown's full passes). cand is that set, a bitset read in index order.

// markW adds worker w's GPUs to the candidates.
func (p *Policy) markW(w dataplane.WorkerID) {
	for _, g := range p.gpusOf(w) {
		p.cand[g>>6] |= 1 << (g & 63)
	}
}

// markFreed adds the GPUs of every replica on GPU d, which was just freed: a replica
// spanning d and other GPUs may start on any of them.
func (p *Policy) markFreed(d int) {
	for _, x := range p.gpuReps[d] {
		p.markW(x)
	}
}

// newHead records that w's queue has a new head: once it has waited a poll interval, w's
// trigger drops to 1.
func (p *Policy) newHead(w dataplane.WorkerID) {
	p.seq++
	p.aging.Push(dataplane.Timed[dataplane.WorkerID]{At: p.queues[w].at + p.tick, Seq: p.seq, Val: w})
}

// tryCandidates is the pass over every GPU restricted to the candidates (the scan it replaces
// runs when scan is set).
func (p *Policy) tryCandidates(now dataplane.Time, out *dataplane.Decisions) {
	if p.scan {
		for g := range p.gpuBusy {
			p.tryGPU(now, g, out)
		}
		return
	}
	for len(p.aging) > 0 && p.aging[0].At <= now {
		p.markW(p.aging.Pop().Val)
	}
	for i := range p.cand {
		for p.cand[i] != 0 {
			// tryGPU clears g's bit and sets none: the lowest set bit is the next GPU.
			p.tryGPU(now, i<<6+bits.TrailingZeros64(p.cand[i]), out)
		}
	}
}

// tryAll is the full pass of the tick and of failures; the aging entries it covers go.
func (p *Policy) tryAll(now dataplane.Time, out *dataplane.Decisions) {
	for len(p.aging) > 0 && p.aging[0].At <= now {
		p.aging.Pop()
	}
	for g := range p.gpuBusy {
		p.tryGPU(now, g, out)
	}
}
