package optflag

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

type myDuration time.Duration

// list is a flag value with its own syntax (a,b,c), as a pointer receiver.
type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(s string) error { *l = strings.Split(s, ","); return nil }
func (l *list) Type() string       { return "a,b,..." }

type opts struct {
	Count     int           `json:"count" flag:"count" help:"how many"`
	Big       int64         `flag:"big" help:"a large count"`
	Ratio     float64       `flag:"ratio" help:"a share"`
	Name      string        `flag:"name" help:"a name"`
	On        bool          `flag:"on" help:"switch on"`
	WarmStart bool          `flag:"no-warm-start,negate" help:"start cold"`
	Wait      myDuration    `flag:"wait" help:"how long"`
	Timeout   time.Duration `flag:"timeout" help:"at most"`
	Hidden    int           // no tag: not a flag
	Skipped   int           `flag:"-"`
	Names     list          `flag:"names" help:"some names"`
}

func defaults() opts {
	return opts{Count: 3, Ratio: 0.5, Name: "x", WarmStart: true, Wait: myDuration(2 * time.Second)}
}

// TestBind: every tagged field is a flag whose default is the field's value, and each kind
// parses as pflag's own flags of that kind; a negated flag sets the field's opposite.
func TestBind(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want opts
		err  string
	}{
		{"defaults", nil, defaults(), ""},
		{"each kind", []string{"--count", "7", "--big", "9000000000", "--ratio", "0.25", "--name", "y", "--on", "--wait", "150ms", "--timeout", "1m"},
			func() opts {
				o := defaults()
				o.Count, o.Big, o.Ratio, o.Name, o.On, o.Wait, o.Timeout = 7, 9000000000, 0.25, "y", true, myDuration(150*time.Millisecond), time.Minute
				return o
			}(), ""},
		{"a pflag.Value field", []string{"--names", "a,b"}, func() opts { o := defaults(); o.Names = list{"a", "b"}; return o }(), ""},
		{"negate", []string{"--no-warm-start"}, func() opts { o := defaults(); o.WarmStart = false; return o }(), ""},
		{"negate false", []string{"--no-warm-start=false"}, defaults(), ""},
		{"bad int", []string{"--count", "x"}, opts{}, `invalid argument "x" for "--count"`},
		{"int overflow", []string{"--count", "99999999999999999999"}, opts{}, "--count"},
		{"bad duration", []string{"--wait", "5"}, opts{}, "--wait"},
		{"bad bool", []string{"--on=maybe"}, opts{}, "--on"},
		{"untagged", []string{"--hidden", "1"}, opts{}, "unknown flag: --hidden"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := defaults()
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			fs.SetOutput(new(strings.Builder))
			Bind(fs, &o)
			err := fs.Parse(tc.args)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(o, tc.want) {
				t.Errorf("got %+v, want %+v", o, tc.want)
			}
		})
	}
}

// TestUsage: the usage lists the flags as pflag's own would (type names, defaults shown only
// when not zero), so that help text is the same whether a flag is bound here or by pflag.
func TestUsage(t *testing.T) {
	o := defaults()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	Bind(fs, &o)
	ref := pflag.NewFlagSet("t", pflag.ContinueOnError)
	ref.IntVar(new(int), "count", 3, "how many")
	ref.Int64Var(new(int64), "big", 0, "a large count")
	ref.Float64Var(new(float64), "ratio", 0.5, "a share")
	ref.StringVar(new(string), "name", "x", "a name")
	ref.BoolVar(new(bool), "on", false, "switch on")
	ref.BoolVar(new(bool), "no-warm-start", false, "start cold")
	ref.DurationVar(new(time.Duration), "wait", 2*time.Second, "how long")
	ref.DurationVar(new(time.Duration), "timeout", 0, "at most")
	ref.Var(new(list), "names", "some names")
	if got, want := fs.FlagUsages(), ref.FlagUsages(); got != want {
		t.Errorf("usage:\n%s\nwant (pflag's own):\n%s", got, want)
	}
	var names []string
	for _, f := range Fields(&o) {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, " "); got != "count big ratio name on no-warm-start wait timeout names" {
		t.Errorf("Fields: %s", got)
	}
}

// TestBindRefuses: a field of a type no flag can be, a negated non-bool, or something other
// than a pointer to a struct is a programming error: Bind panics naming it.
func TestBindRefuses(t *testing.T) {
	type badType struct {
		M map[string]int `flag:"m"`
	}
	type badNegate struct {
		N int `flag:"n,negate"`
	}
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"map field", &badType{}, "field M: unsupported type"},
		{"negated int", &badNegate{}, "field N: negate on a int"},
		{"not a pointer", badType{}, "want a non-nil pointer to a struct"},
		{"nil", (*badType)(nil), "want a non-nil pointer to a struct"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(r.(string), tc.want) {
					t.Errorf("panic %v, want %q", r, tc.want)
				}
			}()
			Bind(pflag.NewFlagSet("t", pflag.ContinueOnError), tc.v)
		})
	}
}
