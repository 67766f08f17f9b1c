package cli

import (
	"math"
	"strconv"

	"github.com/plan-dev/plan/internal/run"
	"github.com/spf13/pflag"
)

// finiteFlags is the one check every numeric flag of every command passes, whatever set it
// (the command line, a PLAN_* variable or --config): NaN and ±Inf are refused by name.
// strconv.ParseFloat accepts "NaN" and "Inf", and no comparison a command makes against a
// bound (x < 0, x > 1) is false for NaN, so a per-command range check lets it through.
func finiteFlags(fs *pflag.FlagSet) error {
	var bad error
	fs.VisitAll(func(f *pflag.Flag) {
		if bad != nil {
			return
		}
		var xs []float64
		switch f.Value.Type() {
		case "float64", "float32":
			x, err := strconv.ParseFloat(f.Value.String(), 64)
			if err != nil {
				return
			}
			xs = []float64{x}
		case "float64Slice":
			xs, _ = fs.GetFloat64Slice(f.Name)
		case "float32Slice":
			ys, _ := fs.GetFloat32Slice(f.Name)
			for _, y := range ys {
				xs = append(xs, float64(y))
			}
		}
		for _, x := range xs {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				bad = run.UsageErrorf("--%s: %s: must be a finite number", f.Name, f.Value.String())
				return
			}
		}
	})
	return bad
}
