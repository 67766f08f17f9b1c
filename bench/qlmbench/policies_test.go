package qlmbench

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/plan-dev/plan/bench"
	"github.com/plan-dev/plan/internal/onformats/benchapi"
)

// TestPoliciesFlag: --policies takes a comma-separated list; an unknown name is a usage error
// (exit 2) naming the flag and the bad value, raised before the trace is read or any replay
// runs (the trace path here does not exist).
func TestPoliciesFlag(t *testing.T) {
	for _, tc := range []struct {
		arg, bad string
	}{
		{"bogus", "bogus"},
		{"qlm,qlm-edf,nope", "nope"},
		{"QLM", "QLM"},
	} {
		o := &Command{}
		fs := pflag.NewFlagSet("qlm", pflag.ContinueOnError)
		o.Flags(fs)
		if err := fs.Parse([]string{"--policies", tc.arg, "--trace", "/nonexistent/trace.csv", "--workload", "single"}); err != nil {
			t.Fatal(err)
		}
		err := o.Run(context.Background(), benchapi.Env{Out: io.Discard, Err: io.Discard})
		if !errors.Is(err, bench.ErrUsage) {
			t.Fatalf("--policies %s: err %v, want a usage error", tc.arg, err)
		}
		if msg := err.Error(); !strings.Contains(msg, "--policies") || !strings.Contains(msg, `"`+tc.bad+`"`) || !strings.Contains(msg, "qlm-edf") {
			t.Errorf("--policies %s: message %q should name the flag, %q and the known policies", tc.arg, msg, tc.bad)
		}
	}
	o := &Command{}
	fs := pflag.NewFlagSet("qlm", pflag.ContinueOnError)
	o.Flags(fs)
	if err := fs.Parse([]string{"--policies", "qlm,qlm-edf"}); err != nil {
		t.Fatal(err)
	}
	if len(o.policies) != 2 || CheckPolicies(o.policies) != nil {
		t.Errorf("policies %q: %v", o.policies, CheckPolicies(o.policies))
	}
}
