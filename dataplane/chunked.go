package dataplane

import "unsafe"

// chunked is the engine's request table: elements in fixed-size chunks, indexed from the
// oldest one held. A table that grows never copies what it holds, as a slice's append does;
// that copy is what a compacting run paid whenever a long batch pinned its oldest request
// (Compact retires only a prefix): CascadeServe's cocktail+ at 256 GPUs, whose one-second
// batches pin a second of arrivals, spent a third of its time in growslice. Chunks the front
// retires are kept (up to pieceSpares) for the back, so a run whose compaction keeps up
// reuses the same memory. T must hold no pointers (dropFront does not clear).
//
// A chunk holds pieceLen elements and is carved from a block of blockPieces chunks laid one
// element apart, so that the chunks of a block start at different offsets within a 4 KB
// page. Why: the first-level cache picks a line's set by address bits 6–11, and a batch's
// requests are often IDs pieceLen apart (CascadeServe at 256 GPUs routes consecutive
// arrivals over 256 stage-1 replicas by deficit): their 128-byte records are 32 KB apart, so
// in 4,096-element chunks laid end to end every record of such a batch fell in the same two
// of the cache's 64 sets, 12 lines each, and every pass over the batch after the first
// (emulate's second, the engine's release, the policy's batchDone) missed it again. IDs
// pieceLen apart now lie in different chunks, at the offsets carveOrder gives them, spread
// over the 32 pairs of sets; an access costs what it did (a shift, a mask, two loads), and
// consecutive IDs (a FIFO's batch) stay adjacent within a chunk.
type chunked[T any] struct {
	// chunks are the chunks' first elements, not slices: 8 bytes each where the table spans
	// thousands of chunks (cocktail+ at 256 GPUs holds a second of arrivals), and an
	// element's address is arithmetic, without the bounds check of a slice's index or the
	// nil check of an array pointer's (a load of the chunk's first line, a miss at scale).
	// Each keeps its block alive for the collector.
	chunks []unsafe.Pointer
	head   int // index in chunks[0] of the oldest element held
	n      int // elements held
	spare  []unsafe.Pointer
	// block is the block new chunks are carved from, carved of them so far.
	block  []T
	carved int
}

const (
	pieceBits = 8
	pieceLen  = 1 << pieceBits
	pieceMask = pieceLen - 1
	// blockPieces chunks make a block, each pieceLen+1 elements after the last: with
	// 128-byte elements, 32 chunks cover the 32 offsets of a record in a 4 KB page.
	blockPieces = 32
	pieceSpares = 1024 // 256k elements: Compact's period's worth of arrivals and more
)

// len is the number of elements held.
func (c *chunked[T]) len() int { return c.n }

// at is element i (0 = the oldest held); i must be in [0, len).
func (c *chunked[T]) at(i int) *T {
	j := c.head + i
	return c.elem(c.chunks[j>>pieceBits], j)
}

// elem is the element at j's place in chunk ch.
func (c *chunked[T]) elem(ch unsafe.Pointer, j int) *T {
	var x T
	return (*T)(unsafe.Add(ch, uintptr(j&pieceMask)*unsafe.Sizeof(x)))
}

// push appends x.
func (c *chunked[T]) push(x T) {
	j := c.head + c.n
	if j>>pieceBits == len(c.chunks) {
		c.chunks = append(c.chunks, c.newChunk())
	}
	*c.elem(c.chunks[j>>pieceBits], j) = x
	c.n++
}

// newChunk returns a spare chunk, else the next one carved from the block.
func (c *chunked[T]) newChunk() unsafe.Pointer {
	if k := len(c.spare); k > 0 {
		ch := c.spare[k-1]
		c.spare = c.spare[:k-1]
		return ch
	}
	if c.carved == len(carveOrder) || c.block == nil {
		c.block = make([]T, blockPieces*(pieceLen+1))
		c.carved = 0
	}
	at := int(carveOrder[c.carved]) * (pieceLen + 1)
	c.carved++
	return unsafe.Pointer(&c.block[at])
}

// carveOrder is the order in which a block's chunks are handed out (by place in the block),
// so that a chunk's offset in a page is not a linear function of its place in the table:
// with chunks in block order, IDs pieceLen−1 apart (cocktail+'s batches at 256 GPUs) fell
// back on a single offset, the next chunk's one-record shift undoing the ID's. This one, a
// shuffle picked by search, keeps IDs 240–272 and 509–513 apart on 16 or more of the 32
// offsets in every window of 128 (TestChunkedOffsets).
var carveOrder = [blockPieces]uint8{9, 27, 22, 7, 21, 0, 23, 14, 5, 31, 20, 25, 10, 26, 16, 3, 19, 29, 1, 12, 6, 17, 11, 24, 8, 30, 2, 18, 15, 28, 4, 13}

// ahead is the slot k places past the back (1 ≤ k ≤ pieceLen) when it lies in the back's
// chunk or the one push takes next (nil when that is not made yet): what a later push
// overwrites. Looking into the next chunk matters with 256-element chunks: without it the
// arrival prefetch (Engine.Admit) skipped 8 arrivals in 256, and cocktail+ at 256 GPUs,
// whose record writes miss, ran 4–5% slower.
func (c *chunked[T]) ahead(k int) *T {
	j := c.head + c.n + k - 1
	switch i := j >> pieceBits; {
	case i < len(c.chunks):
		return c.elem(c.chunks[i], j)
	case i == len(c.chunks) && len(c.spare) > 0:
		return c.elem(c.spare[len(c.spare)-1], j)
	case i == len(c.chunks) && c.block != nil && c.carved < len(carveOrder):
		return c.elem(unsafe.Pointer(&c.block[int(carveOrder[c.carved])*(pieceLen+1)]), j)
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
		m := min(k, pieceLen-c.head)
		c.head += m
		k -= m
		if c.head == pieceLen {
			c.chunks[0] = nil
			c.chunks = c.chunks[1:]
			c.head = 0
			if len(c.spare) < pieceSpares {
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
