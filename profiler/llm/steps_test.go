package llm

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
)

// TestReadAndFitSteps: measured step tables (testdata) become the two iteration curves,
// mean per scheduled-token count, kept as measured where they fall.
func TestReadAndFitSteps(t *testing.T) {
	for _, tc := range []struct {
		file            string
		decode, prefill []formats.PWLPoint
		ctxUs           float64
	}{
		{"steps.csv",
			// 32 tokens (6,000 µs) falls below 8 (7,200 µs): kept; two 2,048-token rows average.
			[]formats.PWLPoint{{Tokens: 1, Us: 7000}, {Tokens: 8, Us: 7200}, {Tokens: 32, Us: 6000}, {Tokens: 64, Us: 9000}},
			[]formats.PWLPoint{{Tokens: 128, Us: 12000}, {Tokens: 512, Us: 30000}, {Tokens: 1024, Us: 50000}, {Tokens: 2048, Us: 93000}}, 0},
		{"steps.jsonl",
			[]formats.PWLPoint{{Tokens: 1, Us: 7000}, {Tokens: 64, Us: 9000}},
			[]formats.PWLPoint{{Tokens: 128, Us: 13000}}, 0},
		{"steps-context.csv",
			// Within each (kind, tokens) group time grows 0.1 µs per context token; the
			// points are the times at no context.
			[]formats.PWLPoint{{Tokens: 1, Us: 5000}, {Tokens: 8, Us: 7000}},
			[]formats.PWLPoint{{Tokens: 512, Us: 30000}}, 0.1},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join("testdata", tc.file)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			steps, err := ReadSteps(path, data)
			if err != nil {
				t.Fatal(err)
			}
			base, err := Estimate("mistral-7b", "A100")
			if err != nil {
				t.Fatal(err)
			}
			p, err := WithSteps(*base, steps)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p.Iteration.Decode, tc.decode) || !reflect.DeepEqual(p.Iteration.Prefill, tc.prefill) || p.Iteration.DecodeUsPerContextToken != tc.ctxUs {
				t.Errorf("decode %v prefill %v ctx %g, want %v %v %g", p.Iteration.Decode, p.Iteration.Prefill, p.Iteration.DecodeUsPerContextToken, tc.decode, tc.prefill, tc.ctxUs)
			}
			doc := &formats.Profile{TypeMeta: formats.TypeMeta{APIVersion: "plan/v1", Kind: "Profile"}, Metadata: formats.Metadata{Name: "x"}, LLMs: []formats.LLMProfile{p}}
			if errs := doc.Validate(); len(errs) > 0 {
				t.Errorf("fitted profile invalid: %v", errs)
			}
		})
	}
}

// TestReadStepsErrors: bad tables are refused naming file, line, field and value.
func TestReadStepsErrors(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"empty", "", "s.csv: no steps"},
		{"no column", "tokens,seconds\n1,0.1\n", `s.csv: line 1: header "tokens,seconds": no column prefill_tokens (want tokens, prefill_tokens, seconds)`},
		{"negative time", "tokens,prefill_tokens,seconds\n4,0,0.1\n1,0,-1\n", "s.csv: line 3: seconds: -1: must be > 0 and finite"},
		{"NaN time", "tokens,prefill_tokens,seconds\n1,0,NaN\n", "s.csv: line 2: seconds: NaN: must be > 0 and finite"},
		{"Inf time", "tokens,prefill_tokens,seconds\n1,0,+Inf\n", "s.csv: line 2: seconds: +Inf: must be > 0 and finite"},
		{"not a number", "tokens,prefill_tokens,seconds\nx,0,1\n", `s.csv: line 2: tokens: "x": not a number`},
		{"fractional tokens", "tokens,prefill_tokens,seconds\n1.5,0,1\n", "s.csv: line 2: tokens: 1.5: must be a whole number of tokens"},
		{"prefill over tokens", "tokens,prefill_tokens,seconds\n4,5,1\n", "s.csv: line 2: prefill_tokens: 5: must be in [0, tokens (4)]"},
		{"zero tokens", "tokens,prefill_tokens,seconds\n0,0,1\n", "s.csv: line 2: tokens: 0: must be >= 1"},
		{"jsonl missing", `{"tokens": 1, "seconds": 1}`, "s.csv: line 1: prefill_tokens: missing"},
		{"bad context", "tokens,prefill_tokens,seconds,context_tokens\n1,0,1,-4\n", `s.csv: line 2: context_tokens: "-4": must be a whole number >= 0`},
		{"jsonl unknown key", `{"tokens": 1, "prefill_tokens": 0, "seconds": 1, "x": 2}`, "s.csv: line 1: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadSteps("s.csv", []byte(tc.data))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	if _, _, _, err := FitSteps([]Step{{Tokens: 4, PrefillTokens: 4, Seconds: 1}}); err == nil || !strings.Contains(err.Error(), "no decode-only step") {
		t.Errorf("prefill only: %v", err)
	}
	if _, _, _, err := FitSteps([]Step{{Tokens: 4, Seconds: 1}}); err == nil || !strings.Contains(err.Error(), "no step with prompt tokens") {
		t.Errorf("decode only: %v", err)
	}
}
