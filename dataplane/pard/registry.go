package pard

import "github.com/plan-dev/plan/dataplane"

// Registry is a policy registry of this system's policies alone (tests and tools that
// serve only this system; the CLI uses the in-tree registry of every system).
func Registry() *dataplane.Registry { return dataplane.NewRegistry(Policies()...) }

// NewPolicy builds one of this system's policies (cfg.Policy empty = "pard").
func NewPolicy(cfg dataplane.Config) (dataplane.Policy, error) {
	return Registry().New(nil, cfg, "pard")
}
