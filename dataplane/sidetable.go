package dataplane

// sideTable holds values by ReqID beside the request table, for what the request record
// does not hold (Request): the batch lists of requests that travelled in more than one
// batch, the prompt prefixes. IDs are grouped in chunks of chunkLen, and a chunk is made
// when a value in its range is first set, so a run that sets none holds none. Unlike an
// IDTable, growing never copies what is held: a cascade sets a list for most requests, and
// copying that table (pointers, with the GC's write barriers) was a tenth of the run.
type sideTable[T any] struct {
	// base is the ID of chunks[0][0], a multiple of chunkLen.
	base   ReqID
	chunks [][]T
}

// A side table's chunks hold chunkLen values.
const (
	chunkBits = 12
	chunkLen  = 1 << chunkBits
	chunkMask = chunkLen - 1
)

// at is id's value (the zero value when none was set or its chunk was forgotten).
func (t *sideTable[T]) at(id ReqID) T {
	if id >= t.base {
		k := int(id-t.base) >> chunkBits
		if k < len(t.chunks) && t.chunks[k] != nil {
			return t.chunks[k][int(id-t.base)&chunkMask]
		}
	}
	var zero T
	return zero
}

// ref is id's slot, made if needed; id must not be below a forgotten chunk.
func (t *sideTable[T]) ref(id ReqID) *T {
	k := int(id-t.base) >> chunkBits
	for k >= len(t.chunks) {
		t.chunks = append(t.chunks, nil)
	}
	if t.chunks[k] == nil {
		t.chunks[k] = make([]T, chunkLen)
	}
	return &t.chunks[k][int(id-t.base)&chunkMask]
}

// forget drops the chunks wholly below id (every ID below id was retired).
func (t *sideTable[T]) forget(id ReqID) {
	for len(t.chunks) > 0 && t.base+chunkLen <= id {
		t.chunks[0] = nil
		t.chunks = t.chunks[1:]
		t.base += chunkLen
	}
}
