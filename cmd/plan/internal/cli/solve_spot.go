package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/plan-dev/plan/internal/run/solve"
)

// spotHelp states the --spot rule once for solve's and frontier's flag help: solve takes it
// with --objective cost, frontier (which always prices a fleet and has no --objective) alone.
const spotHelp = "price the fleet with each GPU type's spot_price_per_hour, running at most SHARE (0..1) of each type's GPUs on spot and keeping at least 1-SHARE of them on-demand (rounded up to whole GPUs); the planner optimises the blend SHARE·spot + (1-SHARE)·on-demand per GPU, the plan's fleet records each type's spot count, the resulting cost per hour and the all-on-demand cost beside it; a type without spot_price_per_hour stays on-demand (said on stderr)"

// spotFlag is --spot SHARE: set says it was given (no sentinel value), v the share, checked
// as it is parsed so a bad value exits 2 naming the flag and the value.
type spotFlag struct {
	set bool
	v   float64
}

func (s *spotFlag) String() string {
	if !s.set {
		return ""
	}
	return strconv.FormatFloat(s.v, 'g', -1, 64)
}

func (s *spotFlag) Set(x string) error {
	v, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
	if err != nil {
		return fmt.Errorf("not a number: want a share in [0, 1]")
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1 {
		return fmt.Errorf("must be a finite share in [0, 1] (the most of each GPU type's GPUs that run on spot)")
	}
	s.set, s.v = true, v
	return nil
}

func (s *spotFlag) Type() string { return "SHARE" }

// addSpotFlag adds --spot with spotHelp after prefix (solve's "with --objective cost: ").
func addSpotFlag(f *pflag.FlagSet, dst *spotFlag, prefix string) { f.Var(dst, "spot", prefix+spotHelp) }

// share is the share given (nil = --spot not given).
func (s *spotFlag) share() *float64 {
	if !s.set {
		return nil
	}
	v := s.v
	return &v
}

func addObjectiveFlag(f *pflag.FlagSet, dst *string) {
	f.StringVar(dst, "objective", solve.ObjectiveDefault, "default (the planner's own objective on the cluster as given) or cost: the least-cost fleet of the cluster's GPU types (price_per_hour, within available) that serves the workload's rates within its SLOs")
}
