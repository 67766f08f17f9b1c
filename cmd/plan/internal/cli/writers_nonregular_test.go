package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestWritersRefuseNonRegular: every writer of plan refuses an output path that exists and is
// not a regular file, before any work, and leaves it as it was. Outputs are renamed into
// place, so writing one over a device would replace the device itself (`-o /dev/null` as
// root). A named pipe stands in for a device: tests cannot make device nodes, and a pipe is
// refused by the same check (formats.CheckWritable, formats.WriteAtomic).
func TestWritersRefuseNonRegular(t *testing.T) {
	repoRoot(t)
	cost := []string{"--profile", "testdata/ppipe/profile.json", "--cluster", "testdata/cost/cluster-priced.yaml", "--workload", "testdata/cost/workload.yaml"}
	for _, tc := range []struct {
		name string
		args []string // $OUT is the named pipe
		pipe string   // the pipe's name under the test's directory (default "out")
	}{
		{"solve -o", []string{"solve", "-q", "-o", "$OUT"}, ""},
		{"solve schedule -o", append([]string{"solve", "-q", "--objective", "cost", "--trace", "testdata/schedule/toy-3windows.csv", "--window", "2m", "-o", "$OUT"}, cost...), ""},
		{"profile -o", []string{"profile", "--zoo", "resnet50", "--gpu", "L4", "-o", "$OUT"}, ""},
		{"workload from-trace -o", []string{"workload", "from-trace", "testdata/fromtrace/llm-two-classes.json", "--slo", "20s", "-o", "$OUT"}, ""},
		{"frontier --csv", append([]string{"frontier", "--rate", "0.5", "--csv", "$OUT"}, cost...), ""},
		{"frontier --plot", append([]string{"frontier", "--rate", "0.5", "--plot", "$DIR/f"}, cost...), "f.png"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			name := tc.pipe
			if name == "" {
				name = "out"
			}
			pipe := filepath.Join(dir, name)
			if err := syscall.Mkfifo(pipe, 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = strings.NewReplacer("$OUT", pipe, "$DIR", dir).Replace(a)
			}
			code, _, stderr := rootRun(t, args...)
			if code != ExitUsage || !strings.Contains(stderr, "named pipe") {
				t.Errorf("exit %d, stderr %q; want exit 2 naming the named pipe", code, stderr)
			}
			st, err := os.Lstat(pipe)
			if err != nil || st.Mode().Type() != fs.ModeNamedPipe {
				t.Fatalf("the pipe was replaced: %v %v", st.Mode(), err)
			}
		})
	}
}
