package cli

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchRunsAnywhere: `plan bench qlm` and `plan bench cascade` run from a directory with
// no repository and no ../shared beside it (embedded Azure trace and profile; cascade's
// synthetic shape without --trace), say which data they used, and take --report DIR.
// Not parallel: it changes the working directory.
func TestBenchRunsAnywhere(t *testing.T) {
	// The solver a `make` build embeds: the test binary has no highs_embed, and the working
	// directory below has no third_party to find highs.wasm in.
	if wasm, err := filepath.Abs(filepath.Join("..", "..", "..", "..", "third_party", "highs", "highs.wasm")); err == nil {
		if _, err := os.Stat(wasm); err == nil {
			t.Setenv("PLAN_HIGHS_WASM", wasm)
		}
	}
	t.Chdir(t.TempDir())
	for _, tc := range []struct {
		name string
		args []string
		want []string // in stdout
		// trace is bench.json's "trace" prefix.
		trace string
	}{
		{"qlm", []string{"bench", "qlm", "--quick", "--workload", "single", "--policies", "qlm", "--speedup", "0.5", "--report", "qlm-report"},
			[]string{"trace: embedded azure-llm-2023-conv.csv", "CC-BY 4.0", "Splitwise", "profile: embedded qlm-a100"}, "embedded azure-llm-2023-conv.csv"},
		{"cascade", []string{"bench", "cascade", "--quick", "--setups", "bert", "--samples", "300", "--window", "5", "--report", "cascade-report"},
			[]string{"arrival trace: synthetic bursty shape", "--trace FILE"}, "synthetic bursty shape"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(t, tc.args...)
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			dir := tc.args[len(tc.args)-1]
			raw, err := os.ReadFile(filepath.Join(dir, "bench.json"))
			if err != nil {
				t.Fatal(err)
			}
			var rep struct{ Trace string }
			if err := json.Unmarshal(raw, &rep); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(rep.Trace, tc.trace) {
				t.Errorf("bench.json trace %q, want prefix %q", rep.Trace, tc.trace)
			}
		})
	}
}

// TestBenchPipedNoProgress: a bench whose stderr is a pipe prints no progress line (no
// carriage return, no erase-line escape): progress is for terminals only.
func TestBenchPipedNoProgress(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string)
	go func() {
		b, _ := io.ReadAll(pr)
		got <- string(b)
	}()
	var out strings.Builder
	code := Run([]string{"bench", "qlm", "--quick", "--workload", "single", "--policies", "qlm", "--speedup", "0.5"},
		Streams{In: strings.NewReader(""), Out: &out, Err: pw})
	pw.Close()
	errs := <-got
	pr.Close()
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if strings.ContainsAny(errs, "\r\033") || strings.ContainsAny(out.String(), "\r\033") {
		t.Errorf("piped run printed progress: stderr %q", errs)
	}
}

// TestEveryBenchTakesReport: `plan bench --help` promises --quick and --report DIR for every
// benchmark (qlm had no --report).
func TestEveryBenchTakesReport(t *testing.T) {
	root, _ := NewRoot(Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard})
	b, _, err := root.Find([]string{"bench"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range b.Commands() {
		if c.Name() == "help" {
			continue
		}
		n++
		for _, f := range []string{"quick", "report"} {
			if c.Flags().Lookup(f) == nil {
				t.Errorf("plan bench %s has no --%s", c.Name(), f)
			}
		}
	}
	if n < 6 {
		t.Errorf("%d benches, want at least 6", n)
	}
}
