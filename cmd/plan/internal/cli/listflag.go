package cli

import "github.com/spf13/pflag"

// listValue is a comma-list string flag whose repeats accumulate: `--zoo a --zoo b` holds
// "a,b", as `--zoo a,b` does. A plain string flag keeps only its last repeat and drops the
// others without a word; a user who profiles two models that way gets a profile of one.
// The first repeat replaces the default.
type listValue struct {
	p   *string
	set bool
}

func (v *listValue) Set(s string) error {
	if v.set && *v.p != "" && s != "" {
		*v.p += "," + s
	} else if !v.set || s != "" {
		*v.p = s
	}
	v.set = true
	return nil
}

func (v *listValue) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

// Type names the value in help ("--load list").
func (v *listValue) Type() string { return "list" }

// listVar defines a list flag on f, stored in p (comma-joined) with default def.
func listVar(f *pflag.FlagSet, p *string, name, def, usage string) {
	*p = def
	f.Var(&listValue{p: p}, name, usage)
}
