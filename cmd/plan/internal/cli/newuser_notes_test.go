package cli

import (
	"fmt"
	"strings"
	"testing"
)

// TestSimulateEngineSettingsOnce: an LLM plan's engine settings are printed once, one entry
// per distinct setting, and the counters that change with the load a line per load point
// (the settings line was repeated at every load, with an entry per instance).
func TestSimulateEngineSettingsOnce(t *testing.T) {
	repoRoot(t)
	code, stdout, stderr := runCLI(t, "simulate", "testdata/export/qlm/plan.json", "--load", "0.5,1", "--duration", "3s")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var settings []string
	loads := 0
	for _, l := range strings.Split(stdout, "\n") {
		switch {
		case strings.HasPrefix(l, "engine settings: "):
			settings = append(settings, l)
		case strings.HasPrefix(l, "engine at load "):
			loads++
			if strings.Contains(l, "settings") {
				t.Errorf("a load line repeats the settings: %s", l)
			}
		}
	}
	if len(settings) != 1 || loads != 2 {
		t.Fatalf("%d settings lines and %d load lines, want 1 and 2:\n%s", len(settings), loads, stdout)
	}
	seen := map[string]bool{}
	for _, e := range strings.Split(strings.TrimPrefix(settings[0], "engine settings: "), ", ") {
		if seen[e] {
			t.Errorf("entry %q twice: %s", e, settings[0])
		}
		seen[e] = true
	}
}

// TestProfileDecodeBatchAndFP8Note: the profile summary names the batch its decode step is
// read at, and FP8 weights on a GPU without FP8 tensor cores are explained (the A100's FP8
// row showed a slower decode than BF16's with identical step terms: only the batch grew).
func TestProfileDecodeBatchAndFP8Note(t *testing.T) {
	for _, tc := range []struct {
		gpu  string
		note bool
	}{{"A100", true}, {"H100", false}} {
		t.Run(tc.gpu, func(t *testing.T) {
			out := t.TempDir() + "/p.json"
			code, stdout, stderr := runCLI(t, "profile", "--llm", "llama-3.1-8b", "--gpu", tc.gpu, "--quantization", "fp8", "-o", out)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if !strings.Contains(stdout, "at batch") {
				t.Errorf("summary does not name the decode step's batch:\n%s", stdout)
			}
			if got := strings.Contains(stderr, "no FP8 tensor cores"); got != tc.note {
				t.Errorf("FP8 note %v, want %v:\n%s", got, tc.note, stderr)
			}
		})
	}
}

// TestSimulateGoodputAboveOfferedSaid: where a load point's goodput/s exceeds its
// offered/s (a Poisson draw above the nominal rate), the table says why, naming the loads.
func TestSimulateGoodputAboveOfferedSaid(t *testing.T) {
	repoRoot(t)
	code, stdout, stderr := runCLI(t, "simulate", "testdata/golden/demo-ppipe-200ms.json", "--load", "0.5:1.0:0.1", "--duration", "10s")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var above []string
	for _, l := range strings.Split(stdout, "\n") {
		f := strings.Fields(l)
		if len(f) < 4 || !strings.HasSuffix(f[2], "%") {
			continue
		}
		var offered, goodput float64
		if _, err := fmt.Sscan(f[1], &offered); err != nil {
			continue
		}
		if _, err := fmt.Sscan(f[3], &goodput); err != nil {
			continue
		}
		if goodput > offered {
			above = append(above, f[0])
		}
	}
	note := ""
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "note: offered/s is the nominal rate") {
			note = l
		}
	}
	if len(above) == 0 {
		if note != "" {
			t.Errorf("a note without a load above its offered rate: %s", note)
		}
		return
	}
	for _, load := range above {
		if !strings.Contains(note, load) {
			t.Errorf("load %s has goodput above offered, the note does not name it: %q\n%s", load, note, stdout)
		}
	}
}
