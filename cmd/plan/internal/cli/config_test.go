package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigKeys: --config ignored unknown keys and accepted a Cluster
// file. A config file sets flags; anything else is bad input naming the file and the key.
func TestConfigKeys(t *testing.T) {
	repoRoot(t)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name string
		file string
		code int
		want []string
	}{
		{"unknown top-level key", write("bogus.yaml", "bogus_key: 1\n"), ExitUsage, []string{"bogus.yaml: bogus_key: unknown key"}},
		{"unknown key in a section", write("section.yaml", "solve:\n  slo: 200ms\n  bogus: 2\n"), ExitUsage, []string{"section.yaml: solve.bogus: unknown key: solve has no flag --bogus"}},
		{"every unknown key", write("two.yaml", "a: 1\nb: 2\n"), ExitUsage, []string{"two.yaml: a: unknown key", "two.yaml: b: unknown key"}},
		{"a cluster file", "testdata/ppipe/cluster.yaml", ExitUsage, []string{`--config testdata/ppipe/cluster.yaml: kind: "Cluster": a Cluster file, not a config file`}},
		{"a section that is a value", write("flat.yaml", "solve: 3\n"), ExitUsage, []string{"flat.yaml: solve: must be a section"}},
		// Flags of other commands are fine at the top level: one file serves every command.
		{"flags of any command", write("good.yaml", "slo: 200ms\nquiet: true\nsimulate:\n  duration: 1s\n"), ExitOK, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "version", "--config", c.file)
			if code != c.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, c.code, stdout, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}
