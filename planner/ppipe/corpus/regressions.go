package corpus

import (
	"embed"
	"fmt"
	"path"
	"strings"
)

// The regression cases: fixed inputs that once made plan solve write a plan contradicting
// itself, kept beside the generated corpus so that every change is held to them.
//
//go:embed regressions
var regressionFiles embed.FS

// regression describes one case of regressions/NAME: its flags and what it once did.
type regression struct {
	name     string
	strategy string
	flags    []Flag
	describe string
}

var regressions = []regression{
	{
		// One whole V100 for an FCN-like model at a 33.3 ms SLO, α = 0.4, the batch
		// allowance with λ̂ = 20,000 req/s: the solve planned batch 4 at C = 19.2 ms
		// (β = 0.2 ms) and 208 req/s, whose batches take 14.4 ms to fill at that rate, so
		// C + filling passes the SLO; its own prediction served 22.8 req/s within the SLO
		// (11% of the stated capacity; its drops at admission).
		name: "formation-1xV100", strategy: "ppipe",
		flags:    []Flag{{"max-partitions", "1"}, {"alpha", "0.4"}, {"batch-allowance", "true"}, {"arrival-rate", "20000"}, {"fill-surplus", "false"}},
		describe: "a single-stage pipeline on one V100 slice whose batch cannot fill within the SLO at its own rate (batch-formation allowance from an estimate far above it)",
	},
}

// Regressions returns the regression cases, in a fixed order.
func Regressions() []Case {
	var out []Case
	for _, r := range regressions {
		read := func(f string) []byte {
			b, err := regressionFiles.ReadFile(path.Join("regressions", r.name, f))
			if err != nil {
				panic(err) // embedded at build time: a missing file is a build mistake
			}
			return b
		}
		c := Case{Name: r.name, Profile: read("profile.json"), Cluster: read("cluster.json"), Workload: read("workload.json"),
			Strategy: r.strategy, Flags: r.flags}
		var fl []string
		for _, f := range r.flags {
			fl = append(fl, fmt.Sprintf("--%s=%s", f.Name, f.Value))
		}
		c.Describe = fmt.Sprintf("%s: %s; strategy %s %s", r.name, r.describe, r.strategy, strings.Join(fl, " "))
		out = append(out, c)
	}
	return out
}
