package pard

import (
	"strings"
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// TestOptionsDecode: the typed options accept the spellings plans and --param flags used when
// the parameters were a map of floats (numbers, 1/0 and true/false for switches), the
// configuration wins over the plan, a plan's unknown keys are skipped while a
// configuration's are an error naming the key and the known ones, and ranges are checked.
func TestOptionsDecode(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cfg, plan map[string]string
		want      func(o *Options) bool
		err       string
	}{
		{"defaults", nil, nil, func(o *Options) bool { return *o == DefaultOptions() }, ""},
		{"numbers and switches", map[string]string{"lambda": "0.25", "samples": "1e3", "autoscale": "1", "purge": "false", "sibling_cancel": "true", "seed": "7"}, nil,
			func(o *Options) bool {
				return o.Lambda == 0.25 && o.Samples == 1000 && o.Autoscale && !o.Purge && o.SiblingCancel && o.Seed == 7
			}, ""},
		{"switch as number", map[string]string{"hop_in_lsub": "0", "split": " 2 "}, nil, func(o *Options) bool { return !o.HopInLsub && o.Split }, ""},
		{"config wins over plan", map[string]string{"headroom": "2"}, map[string]string{"headroom": "3", "cold_start_s": "4"},
			func(o *Options) bool { return o.Headroom == 2 && o.ColdStartS == 4 }, ""},
		{"plan keys for other tools", nil, map[string]string{"triton_instances": "2"}, func(o *Options) bool { return *o == DefaultOptions() }, ""},
		{"unknown key", map[string]string{"lamda": "0.2"}, nil, nil, `policy pard: unknown parameter "lamda" (known: [autoscale cold_start_s cumulative eps`},
		{"not a number", map[string]string{"window_s": "five"}, nil, nil, `policy pard: parameter window_s: "five": must be a number`},
		{"whole number", map[string]string{"samples": "10.5"}, nil, nil, `policy pard: parameter samples: "10.5": must be a whole number`},
		{"negative seed", map[string]string{"seed": "-1"}, nil, nil, `policy pard: parameter seed: "-1": must be a whole number ≥ 0`},
		{"range", map[string]string{"lambda": "2"}, nil, nil, "policy pard: parameter lambda: 2: must be in [0, 1]"},
		{"range from the plan", nil, map[string]string{"oc_alpha": "1"}, nil, "policy pard: parameter oc_alpha: 1: must be in [0, 1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Pipeline{variant: variantNamed(t, "pard"), cfg: dataplane.Config{Policy: "pard", Params: tc.cfg}}
			o, err := p.resolve(tc.plan)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.want(&o) {
				t.Fatalf("options %+v", o)
			}
		})
	}
	// The 23 keys plans and flags used, and q_dropped.
	if got := len(PARDParamNames()); got != 24 {
		t.Errorf("%d parameter names, want 24", got)
	}
}

// variantNamed is the registered pipeline variant called name.
func variantNamed(t *testing.T, name string) pardVariant {
	t.Helper()
	for _, v := range pardVariants {
		if v.name == name {
			return v
		}
	}
	t.Fatalf("no variant %q", name)
	return pardVariant{}
}
