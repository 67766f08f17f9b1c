package params

import (
	"strings"
	"testing"
)

type opts struct {
	F    float64 `json:"f"`
	N    int     `json:"n"`
	Seed uint64  `json:"seed"`
	On   bool    `json:"on"`
	Skip string  `json:"-"`
}

// TestDecode: every field kind, the accepted spellings, and the errors name the key.
func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   map[string]string
		skip bool
		want opts
		err  string
	}{
		{"empty", nil, false, opts{}, ""},
		{"kinds", map[string]string{"f": "0.5", "n": "1e3", "seed": "7", "on": "true"}, false, opts{F: 0.5, N: 1000, Seed: 7, On: true}, ""},
		{"switch as number", map[string]string{"on": " 1 "}, false, opts{On: true}, ""},
		{"number as switch", map[string]string{"f": "true"}, false, opts{F: 1}, ""},
		{"unknown skipped", map[string]string{"other": "x", "n": "2"}, true, opts{N: 2}, ""},
		{"unknown", map[string]string{"nn": "2"}, false, opts{}, `policy p: unknown parameter "nn" (known: [f n on seed])`},
		{"ignored field is unknown", map[string]string{"Skip": "a"}, false, opts{}, `unknown parameter "Skip"`},
		{"not a number", map[string]string{"f": "x"}, false, opts{}, `policy p: parameter f: "x": must be a number`},
		{"not finite", map[string]string{"f": "Inf"}, false, opts{}, `policy p: parameter f: "Inf": must be finite`},
		{"whole", map[string]string{"n": "1.5"}, false, opts{}, `parameter n: "1.5": must be a whole number`},
		{"negative seed", map[string]string{"seed": "-2"}, false, opts{}, `parameter seed: "-2": must be a whole number ≥ 0`},
		{"bad switch", map[string]string{"on": "yes"}, false, opts{}, `parameter on: "yes": must be true or false (or a number: non-zero is true)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o opts
			err := Decode("p", &o, tc.in, tc.skip)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || o != tc.want {
				t.Fatalf("got %+v, %v; want %+v", o, err, tc.want)
			}
		})
	}
}
