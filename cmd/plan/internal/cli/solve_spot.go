package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run"
)

// spotHelp states the --spot rule once for solve's and frontier's flag help.
const spotHelp = "with --objective cost: price the fleet with each GPU type's spot_price_per_hour, running at most SHARE (0..1) of each type's GPUs on spot and keeping at least 1-SHARE of them on-demand (rounded up to whole GPUs); the planner optimises the blend SHARE·spot + (1-SHARE)·on-demand per GPU, the plan's fleet records each type's spot count, the resulting cost per hour and the all-on-demand cost beside it; a type without spot_price_per_hour stays on-demand (said on stderr)"

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

func addSpotFlag(f *pflag.FlagSet, dst *spotFlag) { f.Var(dst, "spot", spotHelp) }

// applySpot sets --spot on the cluster the planner prices (formats.Cluster.SpotShare) after
// applyObjective chose cost, and says on stderr which types have no spot price and so stay
// on-demand, and the rule.
func applySpot(app *App, o *solveOptions, c *formats.Cluster) error {
	if !o.spot.set {
		return nil
	}
	if o.objective != "cost" {
		return run.UsageErrorf("--spot %s: needs --objective cost (spot prices only change what a cost objective pays)", o.spot.String())
	}
	share := o.spot.v
	c.SpotShare = &share
	if none := c.NoSpotPrice(); len(none) > 0 {
		fmt.Fprintf(app.Err, "plan: --spot %g: no spot_price_per_hour for %s in the cluster: priced and run on-demand\n", share, strings.Join(none, ", "))
	}
	app.Infof("spot: at most %g of each GPU type's GPUs on spot, at least %g on-demand (rounded up to whole GPUs)", share, 1-share)
	return nil
}
