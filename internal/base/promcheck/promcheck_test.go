package promcheck

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cases are the fixtures in testdata: what Lint says of each (a substring of one problem,
// "" for none; parse for an error) and what promtool says ("pass", "fail"; "" either way). The
// duplicate series (one label set written in two orders) is caught by Lint; promtool 2.42
// (Debian bookworm) compares label lists as written and passes it, a later one may not.
var cases = []struct {
	file, want string
	parse      bool
	promtool   string
}{
	{"clean.prom", "", false, "pass"},
	{"no_total.prom", `app_requests: counter metrics should have "_total" suffix`, false, "fail"},
	{"milliseconds.prom", `use base unit "seconds" instead of "milliseconds"`, false, "fail"},
	{"no_help.prom", "app_ready: no help text", false, "fail"},
	{"duplicate_series.prom", `app_requests_total{code="429",model="a"}: series exposed 2 times`, false, ""},
	{"malformed.prom", "", true, "fail"},
	// vLLM's and Triton's names break naming rules their consumers fix (waived); help text
	// and every rule for other families still hold.
	{"dropin.prom", "", false, "pass"},
	{"dropin_no_help.prom", "vllm:num_requests_waiting: no help text", false, "fail"},
}

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLint(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			probs, err := Lint(read(t, tc.file))
			switch {
			case tc.parse:
				if err == nil {
					t.Fatalf("no parse error; problems %v", probs)
				}
				return
			case err != nil:
				t.Fatal(err)
			case tc.want == "":
				if len(probs) > 0 {
					t.Errorf("problems in a clean exposition: %v", probs)
				}
				return
			}
			if !strings.Contains(strings.Join(probs, "\n"), tc.want) {
				t.Errorf("problems %v: want one with %q", probs, tc.want)
			}
		})
	}
}

// TestPromtoolAgrees runs the real promtool on every fixture: it passes and fails those the
// table says, so Lint (which must catch each of them) is at least as strict. It skips when
// promtool is absent, unless PLAN_REQUIRE_ALL=1 (CI installs Debian's prometheus package).
func TestPromtoolAgrees(t *testing.T) {
	RequirePromtool(t)
	for _, tc := range cases {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := Promtool(ctx, read(t, tc.file))
		cancel()
		if tc.promtool != "" && (err != nil) != (tc.promtool == "fail") {
			t.Errorf("%s: promtool: %v; want it to %s", tc.file, err, tc.promtool)
		}
	}
}

func TestPromtoolMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if err := Promtool(context.Background(), nil); !errors.Is(err, ErrNoPromtool) {
		t.Errorf("promtool off PATH: %v, want ErrNoPromtool", err)
	}
}
