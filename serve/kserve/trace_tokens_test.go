package kserve

import (
	"strings"
	"testing"
)

// TestParseTraceTokens: the tokens header reads as IN,OUT; anything else is refused naming
// the header and the value.
func TestParseTraceTokens(t *testing.T) {
	cases := []struct {
		v           string
		in, out     int32
		wantErrPart string
	}{
		{v: ""},
		{v: "100,10", in: 100, out: 10},
		{v: " 7 , 3 ", in: 7, out: 3},
		{v: "100", wantErrPart: `Plan-Trace-Tokens: "100"`},
		{v: "-1,3", wantErrPart: "want IN,OUT"},
		{v: "1,99999999", wantErrPart: "want IN,OUT"},
		{v: "a,b", wantErrPart: "want IN,OUT"},
	}
	for _, c := range cases {
		in, out, err := ParseTraceTokens(c.v)
		if c.wantErrPart != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErrPart) {
				t.Errorf("%q: err %v, want %q", c.v, err, c.wantErrPart)
			}
			continue
		}
		if err != nil || in != c.in || out != c.out {
			t.Errorf("%q: %d, %d, %v; want %d, %d", c.v, in, out, err, c.in, c.out)
		}
	}
}
