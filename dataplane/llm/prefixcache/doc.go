// Package prefixcache is the KV block pool of the LLM engine with automatic prefix caching
// (APC) as vLLM V1 does it (vllm/v1/core/block_pool.py, kv_cache_manager.py;
// specs/llm-engine-2.md §2), plus the token-identity hashing that lets traces without text
// (Mooncake's hash_ids, our Trace's prefix_group/prefix_tokens) say which prompts share a
// prefix, and a seeded generator of Mooncake-style multi-turn session traces.
//
// A request's full blocks are named by chained hashes (Prompt.Hashes, BlockHashes): block
// i's hash is Chain(block i−1's hash, block i's token identities), over full blocks only.
// The engine, per request:
//
//	hashes := prompt.Hashes(nil, pool.BlockSize(), prompt+generated tokens)
//	hit := pool.Lookup(hashes, numTokens)            // blocks; counts queries/hits in tokens
//	if pool.Allocate(id, hashes, hit, need) {        // hits touched, the rest popped (LRU)
//	    pool.Cache(id, (computed+scheduled)/blockSize) // full blocks become findable
//	}
//	...
//	pool.Free(id)                                    // reverse order, hashes kept
//
// The pool is a deterministic state machine (no clock, no goroutine), O(1) per block.
package prefixcache
