package workload

import "github.com/plan-dev/plan/formats"

// prefixHits is, for each request of reqs in trace order, the prompt tokens an engine with
// automatic prefix caching and room for every block would find cached on its arrival
// (llm-engine-2 §2): what earlier requests' prompts share with its own, never its last
// prompt token (the engine recomputes it for the logits). Requests say what they share in
// one of two ways (formats.TraceRequest): a prefix group — two of a group share the smaller
// of their prefix_tokens, so a request finds the larger its group computed so far, up to its
// own — or Mooncake hash ids, one per blockTokens prompt tokens (0: 512), whose longest run
// of leading ids already seen is cached. Real caches evict; this is the ceiling the trace
// allows, which is what a workload's shared prefix (llmspec.LLMClass.PrefixTokens) states.
func prefixHits(reqs []formats.TraceRequest, blockTokens int) []int {
	if blockTokens <= 0 {
		blockTokens = formats.MooncakeBlockTokens
	}
	hits := make([]int, len(reqs))
	group := map[formats.PrefixGroup]int{} // the longest prefix each group has computed
	seen := map[int64]bool{}
	for i, r := range reqs {
		hit := 0
		switch ids := r.Hashes(); {
		case r.PrefixGroup != "":
			hit = min(group[r.PrefixGroup], r.PrefixTokens)
			group[r.PrefixGroup] = max(group[r.PrefixGroup], r.PrefixTokens)
		case len(ids) > 0:
			run := 0
			for run < len(ids) && seen[ids[run]] {
				run++
			}
			hit = run * blockTokens
			for _, id := range ids {
				seen[id] = true
			}
		}
		hits[i] = max(min(hit, r.InputTokens-1), 0)
	}
	return hits
}
