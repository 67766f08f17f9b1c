package dyorc

import (
	"github.com/plan-dev/plan/dataplane"
)

// Policies lists DyOrc's scheduler and its baselines (DyOrc §8, §8.3), all serving "dyorc" plans.
// Parameters: state_us (scheduler time charged per DP state, default DefaultStateUs), seed
// (the predictor's rollouts), argmax (1 = most likely successor instead of sampling).
func Policies() []dataplane.PolicySpec {
	mk := func(name, doc string, mode Mode, argmax bool, literal ...bool) dataplane.PolicySpec {
		return dataplane.PolicySpec{Name: name, Doc: doc, Serves: []string{Kind}, New: func(cfg dataplane.Config) (dataplane.Policy, error) {
			if err := cfg.CheckKnown(name, "state_us", "seed", "argmax"); err != nil {
				return nil, err
			}
			c, err := cfg.Float("state_us", DefaultStateUs)
			if err != nil {
				return nil, err
			}
			seed, err := cfg.Float("seed", 1)
			if err != nil {
				return nil, err
			}
			am, err := cfg.Float("argmax", 0)
			if err != nil {
				return nil, err
			}
			return New(name, Options{Mode: mode, Argmax: argmax || am != 0, StateUs: max(c, 0), Seed: uint64(max(seed, 0)), Literal: len(literal) > 0 && literal[0]}), nil
		}}
	}
	return []dataplane.PolicySpec{
		mk("dyorc", "DyOrc: Markov workflow prediction (sampled), the speculative DP at every call, reservations that load ahead into free memory and protect from eviction", ModeSpec, false),
		mk("dyorc-argmax", "DyOrc with the predictor's most likely successor instead of a sample", ModeSpec, true),
		mk("dyorc-literal", "DyOrc read literally: a predicted call binds to its reservation without a DP, reservations count in the device timeline, predicted loads are free", ModeSpec, false, true),
		mk("dyorc-greedy", "DyOrc data plane, each call placed when made by Eq.1 (no prediction, reactive loads)", ModeGreedy, false),
		mk("dyorc-roundrobin", "DyOrc data plane, calls placed on GPUs in turn ignoring what is loaded", ModeRoundRobin, false),
		mk("dyorc-oracle", "DyOrc given each request's true future (requests with a sample): the prediction bound", ModeOracle, false),
		mk("dyorc-ray", "Ray-Serve-like: replicas per service, power-of-two routing, batches ≤ 10, tier-3 hops, reactive autoscaling with Ray's defaults", ModeRay, false),
		mk("dyorc-tis", "Triton-like: the plan's placement frozen, each call to the replica with the earliest estimated finish", ModeFixed, false),
	}
}

// Registry is a policy registry of this system's policies alone.
func Registry() *dataplane.Registry { return dataplane.NewRegistry(Policies()...) }
