package sim

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParseTraceFlag(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "arrivals.json")
	if err := os.WriteFile(trace, []byte(`{"apiVersion":"plan/v1","kind":"Trace","metadata":{"name":"t"},"requests":[{"t_us":0},{"t_us":10}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in, kind string
		bad      bool
	}{
		{"poisson", "poisson", false},
		{"bursty:2", "bursty", false},
		{"mmpp", "mmpp", false},
		{trace, "replay", false},
		{filepath.Join(dir, "missing.json"), "", true},
		{"bursty:-1", "", true},
	}
	for _, tc := range tests {
		spec, err := ParseTraceFlag(tc.in)
		if (err != nil) != tc.bad {
			t.Errorf("%s: error %v, want error %v", tc.in, err, tc.bad)
			continue
		}
		if !tc.bad && spec.Kind != tc.kind {
			t.Errorf("%s: kind %q, want %q", tc.in, spec.Kind, tc.kind)
		}
	}
}
