package qlm

import "github.com/plan-dev/plan/dataplane"

// EngineGauges implements serve.EngineGauger: the state vLLM exports as its
// vllm:num_requests_running, vllm:num_requests_waiting and vllm:kv_cache_usage_perc gauges
// (ecosystem drop-in §1), per application and instance (vLLM's engine label). emit is called
// once for every instance that holds a request of the application or has the application's
// model loaded: running are the sequences of its running batch (vLLM V1's running set),
// waiting those queued for it or swapped out (V1 counts preempted requests as waiting), and
// kv the fraction of its KV cache held (0-1). Requests not placed on an instance yet count
// as waiting on instance 0. Called on the goroutine that drives the policy.
func (p *Policy) EngineGauges(emit func(app dataplane.AppID, engine, running, waiting int, kv float64)) {
	nApps := len(p.class)
	if nApps == 0 || len(p.inst) == 0 {
		return
	}
	run := make([]int, len(p.inst)*nApps)
	wait := make([]int, len(p.inst)*nApps)
	for _, in := range p.inst {
		for _, s := range in.Running() {
			if a := int(s.App); a >= 0 && a < nApps {
				run[in.ID*nApps+a]++
			}
		}
	}
	for _, s := range p.seqs {
		a := int(s.App)
		if a < 0 || a >= nApps || s.Fin {
			continue
		}
		if s.KV > 0 && !s.Swapped {
			continue // in a running batch: counted above
		}
		i := s.Inst
		if i < 0 || i >= len(p.inst) {
			i = 0
		}
		wait[i*nApps+a]++
	}
	for _, in := range p.inst {
		kv := 0.0
		if m := p.llmFor(in, in.model); m != nil && m.KVCap > 0 {
			kv = min(float64(in.KVUsed())/float64(m.KVCap), 1)
		}
		for a := range nApps {
			r, w := run[in.ID*nApps+a], wait[in.ID*nApps+a]
			if r == 0 && w == 0 && p.class[a].Model != in.model {
				continue
			}
			emit(dataplane.AppID(a), in.ID, r, w, kv)
		}
	}
}

// IterationTokens implements serve.IterationReporter: the tokens (prompt chunks and output
// tokens) of the step instance w is running, vLLM's vllm:iteration_tokens_total. Called when
// the step ends, before the policy applies it.
func (p *Policy) IterationTokens(w dataplane.WorkerID) (n int, ok bool) {
	in := p.byWorker(w)
	if in == nil || len(in.Iter()) == 0 {
		return 0, false
	}
	for _, s := range in.Iter() {
		n += s.Sched
	}
	return n, n > 0
}

// CacheConfig implements serve.CacheConfigReporter: each instance's KV block size (tokens)
// and its KV cache in blocks for the model it has loaded, the block_size and num_gpu_blocks
// labels of vLLM's vllm:cache_config_info that the endpoint picker reads.
func (p *Policy) CacheConfig(emit func(engine, blockSize, blocks int)) {
	for _, in := range p.inst {
		if m := p.llmFor(in, in.model); m != nil && m.Block > 0 {
			emit(in.ID, m.Block, m.KVCap/m.Block)
		}
	}
}
