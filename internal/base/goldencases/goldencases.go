// Package goldencases lists the golden plans of testdata/golden with the `plan solve`
// arguments that write each. The command tests solve every one and compare the plan byte for
// byte with its golden file (cli's TestSolveGolden) and `make golden` checks and re-solves
// each; the README and help-example tests use Of to recognise a documented solve that is
// one of them, which those solves already cover.
package goldencases

import "slices"

// Case is a golden plan's file in testdata/golden and the solve arguments that write it.
// Paths are relative to the repository root.
type Case struct {
	File string
	Args []string
}

// Cases are the golden plans. Each is solved with `plan solve -q --deterministic -o FILE
// ARGS...`; every Args is a list of flag and value pairs.
var Cases = []Case{
	{"demo-ppipe.json", nil},
	{"demo-np.json", []string{"--strategy", "np"}},
	{"demo-dartr.json", []string{"--strategy", "dart-r"}},
	{"demo-ppipe-200ms.json", []string{"--slo", "200ms"}},
	{"demo-hc1-ppipe.json", []string{"--cluster", "testdata/ppipe/cluster-hc1.yaml"}},
	{"ppipe-2models.json", []string{"--profile", "testdata/ppipe/profile.json", "--cluster", "testdata/ppipe/cluster.yaml", "--workload", "testdata/ppipe/workload.yaml", "--max-partitions", "2"}},
	{"pard-4apps.json", []string{"--profile", "testdata/pard/profile.json", "--cluster", "testdata/pard/cluster.json", "--workload", "testdata/pard/workload.json"}},
	{"cascade-sentiment.json", []string{"--profile", "testdata/cascade/profile.json", "--cluster", "testdata/cascade/cluster.yaml", "--workload", "testdata/cascade/workload-small.yaml"}},
	{"qlm-3classes.json", []string{"--profile", "testdata/qlm/profile.json", "--cluster", "testdata/qlm/cluster.yaml", "--workload", "testdata/qlm/workload.yaml"}},
	{"dyorc-small.json", []string{"--cluster", "testdata/dyorc/cluster-small.json", "--workload", "testdata/dyorc/small.json"}},
	// A least-cost LLM fleet over three GPU types (QLM, Mélange-style buckets).
	{"qlm-cost.json", []string{"--profile", "testdata/cost/llm-profile.json", "--cluster", "testdata/cost/cluster-llm.yaml", "--workload", "testdata/cost/workload-llm-busy.yaml", "--objective", "cost"}},
	// The same fleet priced with --spot 0.5: A10 and A100 half on spot, L4 (no spot price)
	// on-demand, the all-on-demand cost beside it.
	{"qlm-cost-spot.json", []string{"--profile", "testdata/cost/llm-profile.json", "--cluster", "testdata/cost/cluster-llm-spot.yaml", "--workload", "testdata/cost/workload-llm-busy.yaml", "--objective", "cost", "--spot", "0.5"}},
}

// Of returns the case whose solve args (the arguments after `plan solve`) is, in any order
// of its flags, ignoring where the plan is written and how much is printed (-o/--out FILE,
// -q/--quiet, --deterministic), and false when none is or args holds anything else (an
// argument that is not a flag with its value). Only a case that names its profile, cluster
// and workload matches: a solve that leaves one out takes the embedded demo's or a default
// file of its working directory, which differs between the tests that ask.
func Of(args []string) (Case, bool) {
	pairs, ok := flagPairs(args)
	if !ok {
		return Case{}, false
	}
	for _, c := range Cases {
		want, _ := flagPairs(c.Args)
		if slices.Equal(want, pairs) && namesInputs(c.Args) {
			return c, true
		}
	}
	return Case{}, false
}

// namesInputs reports whether args names the profile, the cluster and the workload.
func namesInputs(args []string) bool {
	for _, f := range []string{"--profile", "--cluster", "--workload"} {
		if !slices.Contains(args, f) {
			return false
		}
	}
	return true
}

// flagPairs is args as sorted "flag value" strings, without the output and verbosity flags.
func flagPairs(args []string) ([]string, bool) {
	var pairs []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-q" || a == "--quiet" || a == "--deterministic":
			continue
		case len(a) < 2 || a[0] != '-' || i+1 >= len(args):
			return nil, false
		case a == "-o" || a == "--out":
			i++
			continue
		}
		pairs = append(pairs, a+" "+args[i+1])
		i++
	}
	slices.Sort(pairs)
	return pairs, true
}
