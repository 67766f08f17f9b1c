package policytest

import (
	"encoding/binary"
	"fmt"
	"hash"
	"hash/fnv"

	"github.com/plan-dev/plan/dataplane"
)

// DecisionHasher folds every event a policy handles and every decision it makes into one
// FNV-64a hash (pass Observe to Engine.Observe): two runs with the same hash made the same
// decisions, so a change to a policy's state or indexes can be held to a recorded hash.
type DecisionHasher struct {
	// NumbersFirst writes a decision's integer fields before its Reason and Model; otherwise
	// every field goes in the Decision struct's order. The two layouts are those the systems'
	// recorded hashes were taken with (CascadeServe and QLM: numbers first; PARD and PPipe:
	// struct order), kept so that the recorded hashes still hold.
	NumbersFirst bool
	// Skip, when set, leaves the decisions it reports out of the hash (QLM: a first-token
	// record says when a token reached its client, not what the scheduler decided).
	Skip func(*dataplane.Decision) bool

	h   hash.Hash64
	buf []byte
}

func (d *DecisionHasher) put(vs ...int64) {
	for _, v := range vs {
		d.buf = binary.LittleEndian.AppendUint64(d.buf, uint64(v))
	}
}

// Observe hashes one handled event and the decisions made on it (an Engine observer).
func (d *DecisionHasher) Observe(now dataplane.Time, ev *dataplane.Event, ds []dataplane.Decision) {
	if d.h == nil {
		d.h = fnv.New64a()
	}
	d.buf = d.buf[:0]
	d.put(int64(now), int64(ev.Kind), int64(ev.Req), int64(ev.Batch), int64(ev.Hop), int64(ev.Stage), int64(ev.Worker), ev.Key)
	for i := range ds {
		x := &ds[i]
		if d.Skip != nil && d.Skip(x) {
			continue
		}
		if d.NumbersFirst {
			d.put(int64(x.Kind), int64(x.App), int64(x.Req), int64(x.Stage), int64(x.Estimate), int64(x.At), x.Key, int64(x.Worker), x.Bytes)
			d.buf = append(d.buf, x.Reason...)
			d.buf = append(d.buf, x.Model...)
		} else {
			d.put(int64(x.Kind), int64(x.App), int64(x.Req), int64(x.Stage))
			d.buf = append(d.buf, x.Reason...)
			d.put(int64(x.Estimate), int64(x.At), x.Key, int64(x.Worker))
			d.buf = append(d.buf, x.Model...)
			d.put(x.Bytes)
		}
		for _, r := range x.Reqs {
			d.put(int64(r))
		}
		for _, p := range x.Path {
			d.put(int64(p.Stage), int64(p.Worker), int64(p.ResStart), int64(p.OutStart), int64(p.Dur))
		}
	}
	d.h.Write(d.buf)
}

// Sum is the hash so far as 16 hex digits, the form the recorded hashes take.
func (d *DecisionHasher) Sum() string {
	if d.h == nil {
		d.h = fnv.New64a()
	}
	return fmt.Sprintf("%016x", d.h.Sum64())
}
