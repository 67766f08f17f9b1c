package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// rootRun runs the CLI in-process and returns exit code, stdout and stderr.
func rootRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(args, Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

func TestVersion(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"table", []string{"version"}, []string{"plan", "go", "solver", "HiGHS", "plan/v1"}},
		{"json", []string{"version", "--output", "json"}, []string{`"go":`, `"solver": "HiGHS`, `"api_version": "plan/v1"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := rootRun(t, tc.args...)
			if code != ExitOK {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	_, out, _ := rootRun(t, "version", "-O", "json")
	var v versionInfo
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("version json: %v", err)
	}
	if v.Module == "" || v.Go == "" {
		t.Errorf("incomplete version info: %+v", v)
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown command", []string{"nosuch"}, `unknown command "nosuch"`},
		{"bad output", []string{"version", "--output", "yaml"}, `--output: "yaml": must be table or json`},
		{"bad log level", []string{"version", "--log-level", "loud"}, `--log-level: "loud"`},
		{"unknown flag", []string{"version", "--frobnicate"}, "unknown flag"},
		{"completion shell", []string{"completion", "tcsh"}, `"tcsh": shell must be`},
		{"missing config", []string{"version", "--config", "/nonexistent/plan.yaml"}, "--config /nonexistent/plan.yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := rootRun(t, tc.args...)
			if code != ExitUsage {
				t.Fatalf("exit %d, want %d; stderr %q", code, ExitUsage, errOut)
			}
			if out != "" {
				t.Errorf("usage error wrote to stdout: %q", out)
			}
			if !strings.Contains(errOut, tc.want) || !strings.HasPrefix(errOut, "plan: ") {
				t.Errorf("stderr %q lacks %q", errOut, tc.want)
			}
		})
	}
}

func TestSettingSourceNamed(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(cfg, []byte("quiet: maybe\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"environment", map[string]string{"PLAN_QUIET": "maybe"}, []string{"version"}, `plan: environment PLAN_QUIET: "maybe": invalid value for --quiet`},
		{"config file", nil, []string{"version", "--config", cfg}, cfg + `: quiet: "maybe": invalid value for --quiet`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			code, _, errOut := rootRun(t, tc.args...)
			if code != ExitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, errOut, tc.want)
			}
		})
	}
}

func TestCompletion(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		code, out, _ := rootRun(t, "completion", sh)
		if code != ExitOK || !strings.Contains(out, "plan") {
			t.Errorf("%s: exit %d, %d bytes", sh, code, len(out))
		}
	}
}

// TestPrecedence checks flags > PLAN_* environment > config file on the global --output flag
// and on a flag of a test-only command.
func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(cfg, []byte("output: json\nprobe:\n  level: from-config\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var got string
	saved := commands
	defer func() { commands = saved }()
	// The full slice expression copies on append, so the probe never lands in saved's array.
	commands = append(commands[:len(commands):len(commands)], func(app *App) *cobra.Command {
		c := &cobra.Command{Use: "probe", Hidden: true, RunE: func(*cobra.Command, []string) error {
			got = app.Output + "/" + probeLevel
			return nil
		}}
		c.Flags().StringVar(&probeLevel, "level", "default", "")
		return c
	})

	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"defaults", nil, []string{"probe"}, "table/default"},
		{"config", nil, []string{"probe", "--config", cfg}, "json/from-config"},
		{"env over config", map[string]string{"PLAN_LEVEL": "from-env", "PLAN_OUTPUT": "table"}, []string{"probe", "--config", cfg}, "table/from-env"},
		{"flag over env", map[string]string{"PLAN_LEVEL": "from-env"}, []string{"probe", "--config", cfg, "--level", "from-flag"}, "json/from-flag"},
		{"config via env", map[string]string{"PLAN_CONFIG": cfg}, []string{"probe"}, "json/from-config"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			probeLevel, got = "", ""
			code, _, errOut := rootRun(t, tc.args...)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

var probeLevel string

// TestCPUProfile: PLAN_CPUPROFILE writes a pprof CPU profile of the run (gzip-compressed
// protobuf), and refuses to overwrite an existing file (exit 2, nothing run).
func TestCPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	t.Setenv(cpuProfileEnv, path)
	if code, _, errOut := rootRun(t, "version"); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("%s: %d bytes, not a gzip-compressed profile", path, len(b))
	}
	code, out, errOut := rootRun(t, "version")
	if code != ExitUsage || out != "" || !strings.Contains(errOut, cpuProfileEnv) || !strings.Contains(errOut, "exists") {
		t.Fatalf("existing profile: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
