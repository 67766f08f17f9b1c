package qlm

import "slices"

// pullMemo remembers which kinds of instance found nothing to pull or split (QLM §5 request
// pulling) since the last change to what pull and split read of the other instances
// (stepSet.ver: the virtual queues, their groups, the instances holding queued groups;
// stepset.go). Of the pulling instance itself they read only its kind, so another instance
// of that kind finds nothing too until ver moves (at 128 instances, each
// instance with a spare seat re-scanned, at every step, groups queued on instances loading a
// model, which no instance with a running batch takes: it would not start them sooner).
type pullMemo struct {
	ver   uint64
	kinds []pullKind
}

// pullKind is what pull and split read of the pulling instance: its GPU's profiles, its
// model, whether it runs nothing (only then does it take another model's group, paying the
// swap from its warm cache, which then counts too). Its external load must be zero (no
// observation): externalSeconds is not part of the kind.
type pullKind struct {
	gpu, model string
	empty      bool
	warm       []string
}

// has: a pull by in (empty: nothing running or swapped) found nothing at ver.
func (m *pullMemo) has(ver uint64, in *instance, empty bool) bool {
	if m.ver != ver {
		m.ver, m.kinds = ver, m.kinds[:0]
		return false
	}
	for _, k := range m.kinds {
		if k.empty == empty && eqName(k.model, in.model) && eqName(k.gpu, in.gpu) && (!empty || slices.Equal(k.warm, in.warm)) {
			return true
		}
	}
	return false
}

// add records that a pull by in found nothing at ver (a few kinds at most are kept).
func (m *pullMemo) add(ver uint64, in *instance, empty bool) {
	if m.ver != ver {
		m.ver, m.kinds = ver, m.kinds[:0]
	}
	if len(m.kinds) >= 8 {
		return
	}
	k := pullKind{gpu: in.gpu, model: in.model, empty: empty}
	if empty {
		k.warm = slices.Clone(in.warm)
	}
	m.kinds = append(m.kinds, k)
}

// eqName is a == b, without the call that compares bytes when both are one interned name
// (Attach interns the model and GPU names).
func eqName(a, b string) bool { return sameBytes(a, b) || a == b }
