// Package llmdeploy is the LLM deployment search of `plan solve --objective cost --search`:
// the least-cost fleet over GPU type × tensor-parallel size × engine settings (vLLM's
// max_num_batched_tokens and max_num_seqs) × serving mode that holds every class's SLOs at
// the percentile the class states (llm-deploy-search.md §1, §3, §4).
//
// The search follows the spec's §4 methods: candidates are enumerated per model (Enumerate:
// the profiles given, plus roofline-derived profiles, labelled estimated, for every GPU type
// of the cluster the user gave no profile for); each candidate's capacity is found by the
// capacity judge the QLM planner asks too (planner/llmcap: bisection on the Poisson arrival
// rate of one instance, as Vidur-Search and DistServe's search_binary.py, over one window
// and precision), the engine (dataplane/llm's Replay, the engine the simulator runs) serving
// each probe's requests drawn from the classes' full token-length distributions, judged at
// the classes' SLO percentiles (§6: the share of requests meeting each SLO must reach its
// percentile); the
// candidates are simulated in parallel by a worker pool whose result does not depend on the
// number of workers; then the existing fleet MILP (planner/fleet, Mélange's ILP, §4) picks
// the cheapest mix of candidates within the cluster's available GPUs.
//
// Modes (§1, §2): aggregated (one engine per instance, AggregatedEvaluator) and, where the
// cluster states a KV link (kv_link_gbps), disaggregated (prefill and decode instances at a
// ratio, DisaggregatedEvaluator over dataplane/llm's disaggregated replay); each is an
// Evaluator, and a model is served by its aggregated candidates or by one disaggregated one.
package llmdeploy
