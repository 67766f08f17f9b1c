package kserve

import (
	"strings"
	"testing"
)

func TestParseTraceIndex(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr string
	}{
		{"", 0, ""},
		{"0", 1, ""},
		{"41", 42, ""},
		{"1099511627775", 1 << 40, ""},
		{"1099511627776", 0, `"1099511627776": want a whole number from 0 to 1099511627775`},
		{"-1", 0, `"-1"`},
		{"1e3", 0, `"1e3"`},
		{" 7", 0, `" 7"`},
		{"x", 0, "header Plan-Trace-Index"},
	}
	for _, tc := range tests {
		got, err := ParseTraceIndex(tc.in)
		switch {
		case tc.wantErr == "" && (err != nil || got != tc.want):
			t.Errorf("ParseTraceIndex(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("ParseTraceIndex(%q) = %d, %v; want an error containing %q", tc.in, got, err, tc.wantErr)
		}
	}
}
