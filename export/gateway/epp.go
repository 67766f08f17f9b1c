package gateway

import (
	"fmt"

	"github.com/plan-dev/plan/formats/llmspec"
)

// Scorer weights: the prefix-cache scorer at twice the queue and KV-utilization scorers, as
// llm-d's reference configurations weigh them (deploy/config: epp-precise-prefix-cache-config,
// pd-epp-config).
var (
	prefixWeight = 2.0
	loadWeight   = 1.0
)

// assumesPrefixCaching reports whether the plan counts on prefix caching in the pool: its
// engines that compute prompts (aggregated and prefill instances) cache prefixes, and a class
// of its model shares a prompt prefix (prefix_tokens), whose prefill the simulator saved.
func assumesPrefixCaching(p *pool) bool {
	shared := false
	for _, c := range p.classes {
		shared = shared || c.PrefixTokens > 0
	}
	if !shared {
		return false
	}
	for _, in := range p.insts {
		if in.Role == llmspec.RoleDecode {
			continue
		}
		if c := in.Engine.EnablePrefixCaching; c != nil && !*c {
			return false
		}
	}
	return true
}

// disaggregated reports whether the pool has prefill and decode instances.
func disaggregated(p *pool) bool {
	for _, in := range p.insts {
		if in.Role != "" {
			return true
		}
	}
	return false
}

// prefixArgs sizes the approximate prefix index: prompts matched up to the longest prompt of
// the pool's classes, and per server the KV blocks of the smallest engine (KV capacity over
// the block size) that computes prompts.
func prefixArgs(p *pool) PrefixProducerArgs {
	a := PrefixProducerArgs{}
	for _, c := range p.classes {
		a.MaxPrefixTokensToMatch = max(a.MaxPrefixTokensToMatch, c.InputTokens.Max)
	}
	for _, in := range p.insts {
		if in.Role == llmspec.RoleDecode || in.Engine.BlockSize < 1 {
			continue
		}
		blocks := in.KVCapacityTokens / int64(in.Engine.BlockSize)
		if a.LRUCapacityPerServer == 0 || blocks < a.LRUCapacityPerServer {
			a.LRUCapacityPerServer = blocks
		}
	}
	a.LRUCapacityPerServer = max(a.LRUCapacityPerServer, 1)
	a.MaxPrefixTokensToMatch = max(a.MaxPrefixTokensToMatch, 1)
	return a
}

// eppConfig is the pool's endpoint picker configuration and the comment that says why.
func eppConfig(p *pool) (EPPConfig, []string) {
	prefix := assumesPrefixCaching(p)
	disagg := disaggregated(p)
	cfg := EPPConfig{APIVersion: EPPAPIVersion, Kind: EPPKind}
	why := []string{fmt.Sprintf("Endpoint picker of pool %s (model %s): run it as the Service %s-epp with this file as its configuration.", p.name, p.model, p.name)}
	// The approximate prefix index feeds the prefix scorer and the P/D decider.
	if prefix || disagg {
		cfg.Plugins = append(cfg.Plugins, PluginSpec{Type: PrefixProducer, Parameters: prefixArgs(p)})
	}
	var scorers []SchedulingPlugin
	if prefix {
		cfg.Plugins = append(cfg.Plugins, PluginSpec{Type: PrefixScorer})
		scorers = append(scorers, SchedulingPlugin{PluginRef: PrefixScorer, Weight: &prefixWeight})
		why = append(why, "Prefix-cache-aware scoring: the pool's engines cache prefixes and its classes share prompt prefixes (prefix_tokens), as the plan assumed.")
	} else {
		why = append(why, "No prefix-cache scoring: the plan assumes no shared prefixes in the pool (no class sets prefix_tokens, or its engines do not cache them).")
	}
	cfg.Plugins = append(cfg.Plugins, PluginSpec{Type: QueueScorer})
	scorers = append(scorers, SchedulingPlugin{PluginRef: QueueScorer, Weight: &loadWeight})
	if !disagg {
		cfg.Plugins = append(cfg.Plugins, PluginSpec{Type: KVUtilScorer}, PluginSpec{Type: MaxScorePicker}, PluginSpec{Type: SingleProfileHandler})
		scorers = append(scorers, SchedulingPlugin{PluginRef: KVUtilScorer, Weight: &loadWeight})
		cfg.SchedulingProfiles = []SchedulingProfile{{Name: "default", Plugins: append(scorers, SchedulingPlugin{PluginRef: MaxScorePicker})}}
		why = append(why, "Queue and KV-cache-utilization scoring, the highest score picked.")
		return cfg, why
	}
	cfg.Plugins = append(cfg.Plugins, PluginSpec{Type: PrefillFilter}, PluginSpec{Type: DecodeFilter}, PluginSpec{Type: MaxScorePicker},
		PluginSpec{Type: DisaggProfileHandler, Parameters: DisaggHandlerArgs{Deciders: map[string]string{"prefill": PDDecider}}},
		PluginSpec{Type: PDDecider, Parameters: PDDeciderArgs{NonCachedTokens: 1}})
	for _, stage := range []struct{ name, filter string }{{"prefill", PrefillFilter}, {"decode", DecodeFilter}} {
		ps := []SchedulingPlugin{{PluginRef: stage.filter}, {PluginRef: MaxScorePicker}}
		cfg.SchedulingProfiles = append(cfg.SchedulingProfiles, SchedulingProfile{Name: stage.name, Plugins: append(ps, scorers...)})
	}
	why = append(why, "Disaggregated: a decode pod is picked first, then a prefill pod for every prompt with a token not cached on it",
		"(nonCachedTokens 1), as the plan's prefill instances take every request; queue scoring in both profiles.")
	return cfg, why
}
