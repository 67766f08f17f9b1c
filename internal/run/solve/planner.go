package solve

import (
	"github.com/spf13/pflag"

	"github.com/plan-dev/plan/internal/base/optflag"
	"github.com/plan-dev/plan/internal/registry/system"
	"github.com/plan-dev/plan/planner"
)

// Flag is one planner flag given on the command line, with its value as the command line
// spelt it (pflag's Value.String of the parsed flag).
type Flag struct {
	Name, Value string
}

// PlannerOptions are a planner's own options (planner.Planner.Options, a typed struct) as
// flags: the fields its `flag` tags name (internal/base/optflag), set by name from their
// command-line spelling.
type PlannerOptions struct {
	fs *pflag.FlagSet
}

// NewPlanner is a fresh planner of sys and its options.
func NewPlanner(sys system.Planning) (planner.Planner, *PlannerOptions) {
	pl := sys.NewPlanner()
	fs := pflag.NewFlagSet(sys.Name(), pflag.ContinueOnError)
	optflag.Bind(fs, pl.Options())
	return pl, &PlannerOptions{fs: fs}
}

// Takes reports whether the planner has the option name.
func (o *PlannerOptions) Takes(name string) bool { return o.fs.Lookup(name) != nil }

// Names are the planner's options as flags ("--name"), sorted.
func (o *PlannerOptions) Names() []string {
	var out []string
	o.fs.VisitAll(func(x *pflag.Flag) { out = append(out, "--"+x.Name) })
	return out
}

// Set sets the option name from its command-line spelling (pflag's error where the value
// does not parse).
func (o *PlannerOptions) Set(name, value string) error { return o.fs.Set(name, value) }
