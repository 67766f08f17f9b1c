package dataplane

// chunked is the engine's request table: elements in fixed-size chunks, indexed from the
// oldest one held. A table that grows never copies what it holds, as a slice's append does;
// that copy is what a compacting run paid whenever a long batch pinned its oldest request
// (Compact retires only a prefix): CascadeServe's cocktail+ at 256 GPUs, whose one-second
// batches pin a second of arrivals, spent a third of its time in growslice. Chunks the front
// retires are kept (up to chunkSpares) for the back, so a run whose compaction keeps up
// reuses the same memory. T must hold no pointers (dropFront does not clear).
type chunked[T any] struct {
	chunks [][]T
	head   int // index in chunks[0] of the oldest element held
	n      int // elements held
	spare  [][]T
}

const (
	chunkBits   = 12
	chunkLen    = 1 << chunkBits
	chunkMask   = chunkLen - 1
	chunkSpares = 64 // 256k elements: Compact's period's worth of arrivals and more
)

// len is the number of elements held.
func (c *chunked[T]) len() int { return c.n }

// at is element i (0 = the oldest held); i must be in [0, len).
func (c *chunked[T]) at(i int) *T {
	j := c.head + i
	return &c.chunks[j>>chunkBits][j&chunkMask]
}

// push appends x.
func (c *chunked[T]) push(x T) {
	j := c.head + c.n
	if j>>chunkBits == len(c.chunks) {
		var ch []T
		if k := len(c.spare); k > 0 {
			ch, c.spare = c.spare[k-1], c.spare[:k-1]
		} else {
			ch = make([]T, chunkLen)
		}
		c.chunks = append(c.chunks, ch)
	}
	c.chunks[j>>chunkBits][j&chunkMask] = x
	c.n++
}

// ahead is the slot k places past the back (k ≥ 1) when it lies in the back's chunk, nil
// otherwise: what a later push overwrites.
func (c *chunked[T]) ahead(k int) *T {
	j := c.head + c.n + k - 1
	if i := j >> chunkBits; i < len(c.chunks) {
		return &c.chunks[i][j&chunkMask]
	}
	return nil
}

// dropFront forgets the k oldest elements (k ≤ len). They are not cleared: T holds no
// pointers (the engine's Request, checked by TestRequestLayout), so nothing is kept alive
// through them, and push overwrites a slot whole; clearing was a write stream as long as the
// table.
func (c *chunked[T]) dropFront(k int) {
	c.n -= k
	for k > 0 {
		ch := c.chunks[0]
		m := min(k, chunkLen-c.head)
		c.head += m
		k -= m
		if c.head == chunkLen {
			c.chunks[0] = nil
			c.chunks = c.chunks[1:]
			c.head = 0
			if len(c.spare) < chunkSpares {
				c.spare = append(c.spare, ch)
			}
		}
	}
}

// snapshot copies the elements held, oldest first.
func (c *chunked[T]) snapshot() []T {
	out := make([]T, c.n)
	for i := range out {
		out[i] = *c.at(i)
	}
	return out
}
