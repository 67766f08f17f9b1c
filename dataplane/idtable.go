package dataplane

// IDTable is per-request policy state indexed by ReqID from a base: Forget trims its front as
// the engine retires requests (Forgetter, increasing ID order), so it spans only the requests
// between the oldest not yet forgotten and the newest set, however many requests have passed.
// Lookups stay O(1) slice indexing on the hot path. The zero value is an empty table.
type IDTable[T any] struct {
	base ReqID
	v    []T
}

// At returns id's entry (the zero value when unset or forgotten).
func (t *IDTable[T]) At(id ReqID) T {
	if id >= t.base && int(id-t.base) < len(t.v) {
		return t.v[id-t.base]
	}
	var zero T
	return zero
}

// Set stores x for id; a forgotten id (below base) is ignored: the engine never shows one
// to a policy again.
func (t *IDTable[T]) Set(id ReqID, x T) {
	if id < t.base {
		return
	}
	var zero T
	for int(id-t.base) >= len(t.v) {
		t.v = append(t.v, zero)
	}
	t.v[id-t.base] = x
}

// Unset clears id's entry without growing the table.
func (t *IDTable[T]) Unset(id ReqID) {
	if id >= t.base && int(id-t.base) < len(t.v) {
		var zero T
		t.v[id-t.base] = zero
	}
}

// Forget drops every entry up to and including id. Re-slicing the front off is amortized
// O(1): the next append that outgrows the shortened capacity copies only the live span.
func (t *IDTable[T]) Forget(id ReqID) {
	if id < t.base {
		return
	}
	n := int(id-t.base) + 1
	if n >= len(t.v) {
		t.v = t.v[:0]
	} else {
		clear(t.v[:n])
		t.v = t.v[n:]
	}
	t.base = id + 1
}

// Size is the number of entries held (memory follows what is in flight, not what has passed).
func (t *IDTable[T]) Size() int { return len(t.v) }

// Forgotten reports whether id lies below the table's base: Forget has retired it.
func (t *IDTable[T]) Forgotten(id ReqID) bool { return id < t.base }
