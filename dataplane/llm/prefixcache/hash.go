package prefixcache

import "hash/fnv"

// A request's tokens are named by identity, not by text: token i of a Segment{ID, Tokens} is
// the pair (ID, i). Two prompts share a token prefix exactly when their token identities agree
// position by position. This is how the traces that carry no text say what is shared:
// Mooncake's hash_ids (one id per 512-token block, llm-engine-2.md §3: "equal ids = shared
// prefix") and our Trace's prefix_group/prefix_tokens (requests of one group share their
// first prefix_tokens tokens).

// Segment is a run of Tokens tokens whose identities are (ID, 0), (ID, 1), … (ID, Tokens−1).
type Segment struct {
	ID     uint64
	Tokens int
}

// Root is the parent hash of a request's first block. vLLM folds extra keys (LoRA id,
// multimodal hashes, cache_salt) into the first block (llm-engine-2.md §2); a caller that
// needs them passes another root to Chain.
const Root uint64 = 0x6a09e667f3bcc908

// mix folds x into h: a 64-bit combine followed by murmur3's fmix64 finalizer, so every
// input bit reaches every output bit. 64-bit hashes collide with probability ~n²/2^65: far
// below anything a simulation of millions of blocks can observe (vLLM's default builtin hash
// makes the same trade; SHA-256 is its opt-in, llm-engine-2.md §2).
func mix(h, x uint64) uint64 {
	h ^= x + 0x9e3779b97f4a7c15 + (h << 6) + (h >> 2)
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb93fe53e94ce
	h ^= h >> 33
	return h
}

// Chain is the hash of a full block whose parent block hashes to parent and whose token
// identities hash to content: vLLM's hash(parent hash, block token ids, extra keys)
// (llm-engine-2.md §2). Equal chains mean equal whole prefixes, not just equal blocks.
func Chain(parent, content uint64) uint64 { return mix(mix(parent, 0x5bd1e995), content) }

// BlockHashes appends to dst the chained hashes of the full blocks of blockSize tokens that
// segs' tokens fill (a partial last block has none: only full blocks are cached), starting
// from parent root. A block's content hash folds the runs of token identities it holds
// (segment id, first offset, length), so equal identities always hash equal however the
// segments fall on block boundaries. O(blocks + segments).
func BlockHashes(dst []uint64, root uint64, blockSize int, segs []Segment) []uint64 {
	if blockSize <= 0 {
		return dst
	}
	parent := root
	content := uint64(0)
	fill := 0 // tokens in the current block
	for _, s := range segs {
		off := 0
		for off < s.Tokens {
			run := min(s.Tokens-off, blockSize-fill)
			content = mix(mix(mix(content, s.ID), uint64(off)), uint64(run))
			off += run
			fill += run
			if fill == blockSize {
				parent = Chain(parent, content)
				dst = append(dst, parent)
				content, fill = 0, 0
			}
		}
	}
	return dst
}

// GroupID is the segment id of a named prefix group (a trace's prefix_group): FNV-1a of the
// name, tagged so that no group collides with a Mooncake hash id or a request's own id by
// construction of the input space.
func GroupID(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte("group\x00"))
	h.Write([]byte(name))
	return mix(h.Sum64(), 1)
}

// HashBlockID is the segment id of a Mooncake hash id (tagged as GroupID is).
func HashBlockID(id int64) uint64 { return mix(uint64(id), 2) }

// UniqueID is the segment id of a request's own tokens (those it shares with no other
// request): key is anything that identifies the request for as long as its blocks may be
// reused — its trace row or engine id. A preempted request re-admitted under the same key
// hits its own cached blocks, as vLLM's does (llm-engine-2.md §1, preemption).
func UniqueID(key uint64) uint64 { return mix(key, 3) }

// Prompt is what a request's tokens share with others. The request's tokens are its prompt
// (InputTokens) followed by its output; the output is always its own.
//   - HashIDs set (Mooncake): prompt block i of HashBlockTokens tokens is HashIDs[i]'s
//     tokens; the last id covers the partial block InputTokens − HashBlockTokens·(n−1).
//   - GroupTokens > 0: the first GroupTokens prompt tokens are Group's; the rest the
//     request's own. Requests of one group share min(their GroupTokens) tokens.
//   - neither: every token is the request's own.
type Prompt struct {
	InputTokens int
	// Mooncake block ids and their block size (512 in Mooncake's traces).
	HashIDs         []int64
	HashBlockTokens int
	// Group is the prefix group's id (GroupID) and GroupTokens how many prompt tokens it covers.
	Group       uint64
	GroupTokens int
	// Unique is the request's own id (UniqueID).
	Unique uint64
}

// Segments appends to dst the segments of the request's first tokens tokens (tokens beyond
// InputTokens are output: the request's own).
func (p Prompt) Segments(dst []Segment, tokens int) []Segment {
	in := min(p.InputTokens, tokens)
	own := 0 // offset into the request's own tokens
	switch {
	case len(p.HashIDs) > 0 && p.HashBlockTokens > 0:
		left := in
		for _, id := range p.HashIDs {
			if left <= 0 {
				break
			}
			n := min(left, p.HashBlockTokens)
			dst = append(dst, Segment{ID: HashBlockID(id), Tokens: n})
			left -= n
		}
		if left > 0 { // more prompt than ids cover (a validated trace has none)
			dst = append(dst, Segment{ID: p.Unique, Tokens: left})
			own = left
		}
	case p.GroupTokens > 0:
		g := min(p.GroupTokens, in)
		dst = append(dst, Segment{ID: p.Group, Tokens: g})
		if in > g {
			dst = append(dst, Segment{ID: p.Unique, Tokens: in - g})
			own = in - g
		}
	default:
		if in > 0 {
			dst = append(dst, Segment{ID: p.Unique, Tokens: in})
			own = in
		}
	}
	if out := tokens - in; out > 0 {
		if own > 0 { // continue the request's own run: its output follows its own prompt tokens
			dst[len(dst)-1].Tokens += out
		} else {
			dst = append(dst, Segment{ID: p.Unique, Tokens: out})
		}
	}
	return dst
}

// Hashes appends to dst the chained hashes of the full blockSize-token blocks of the
// request's first tokens tokens (from Root).
func (p Prompt) Hashes(dst []uint64, blockSize, tokens int) []uint64 {
	var buf [8]Segment
	return BlockHashes(dst, Root, blockSize, p.Segments(buf[:0], tokens))
}
