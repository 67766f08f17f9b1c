package prefixcache

import "github.com/plan-dev/plan/dataplane"

// PromptOf is the Prompt of a request of inputTokens prompt tokens whose trace said prefix
// (dataplane.Arrival.Prefix; nil: every token its own), with unique (UniqueID) naming its own
// tokens. A trace's group name becomes GroupID(name); Mooncake hash ids keep their block
// size.
func PromptOf(inputTokens int, prefix *dataplane.Prefix, unique uint64) Prompt {
	p := Prompt{InputTokens: inputTokens, Unique: unique}
	if prefix == nil {
		return p
	}
	switch {
	case len(prefix.HashIDs) > 0 && prefix.HashBlockTokens > 0:
		p.HashIDs, p.HashBlockTokens = prefix.HashIDs, int(prefix.HashBlockTokens)
	case prefix.Group != "" && prefix.GroupTokens > 0:
		p.Group, p.GroupTokens = GroupID(prefix.Group), int(prefix.GroupTokens)
	}
	return p
}
