package serve

import (
	"bytes"
	"strings"
	"testing"

	"github.com/plan-dev/plan/internal/run"
)

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{{"1048576", 1 << 20, true}, {"16MiB", 16 << 20, true}, {"64 KiB", 64 << 10, true}, {"2GB", 2e9, true}, {"0", 0, false}, {"-1", 0, false}, {"lots", 0, false}, {"9999999GiB", 0, false}} {
		got, err := parseSize(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("parseSize(%q) = %d, %v", c.in, got, err)
		}
	}
}

// TestWarnPublic: binding the data API to every interface or a public address warns on
// stderr; loopback does not.
func TestWarnPublic(t *testing.T) {
	for _, tc := range []struct {
		addr string
		warn bool
	}{
		{"0.0.0.0:8080", true}, {":8080", true}, {"192.0.2.1:80", true}, {"[::]:8001", true},
		{"127.0.0.1:8080", false}, {"localhost:9000", false}, {"[::1]:8001", false}, {"", false},
	} {
		var b bytes.Buffer
		WarnPublic(&run.IO{Streams: run.Streams{Err: &b}}, "--addr", tc.addr)
		if got := strings.Contains(b.String(), "warning: --addr "+tc.addr); got != tc.warn {
			t.Errorf("%q: warned %v (%q), want %v", tc.addr, got, b.String(), tc.warn)
		}
	}
}
