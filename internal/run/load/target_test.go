package load

import (
	"strings"
	"testing"
)

// TestLoadTarget: loopback URLs are taken quietly, others with one line saying the traffic
// leaves the machine; other schemes are refused naming the flag.
func TestLoadTarget(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		note, ok bool
	}{
		{"http://127.0.0.1:8000/", "http://127.0.0.1:8000", false, true},
		{"https://localhost:8443", "https://localhost:8443", false, true},
		{"http://[::1]:1", "http://[::1]:1", false, true},
		{"https://inference.example.com", "https://inference.example.com", true, true},
		{"http://10.0.0.7:8000", "http://10.0.0.7:8000", true, true},
		{"ftp://127.0.0.1", "", false, false},
		{"127.0.0.1:8000", "", false, false},
		{"http://user:pw@127.0.0.1:1", "", false, false},
		{"http://127.0.0.1:1/v1", "", false, false},
	} {
		var errb strings.Builder
		got, err := CheckTarget(&errb, "--openai", tc.in)
		if (err == nil) != tc.ok || got != tc.want || (errb.Len() > 0) != tc.note {
			t.Errorf("CheckTarget(%q) = %q, %v, note %q", tc.in, got, err, errb.String())
		}
		if err != nil && (!strings.Contains(err.Error(), "--openai") || strings.Contains(err.Error(), "pw")) {
			t.Errorf("CheckTarget(%q): error %v does not name the flag, or shows the password", tc.in, err)
		}
	}
}
