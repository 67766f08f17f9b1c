package vllmruns

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
)

// TestWriteInputs: --report writes, for each run, the profile and the trace the bench
// replays, as documents plan simulate reads (validated), the trace the replay's own; a run
// id becomes one safe path element, and two ids that would share one are refused.
func TestWriteInputs(t *testing.T) {
	runs := bundled(t)[:2]
	runs[1].UsersPerSystemPrompt = 5
	dir := t.TempDir()
	if err := WriteInputs(dir, runs, 7); err != nil {
		t.Fatal(err)
	}
	for _, run := range runs {
		sub := filepath.Join(dir, "run-"+run.ID)
		prof, err := formats.ReadInto[*formats.Profile](filepath.Join(sub, "profile.json"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(prof.LLMs) != 1 || prof.LLMs[0].KVCapacityTokens != run.KVGPUBlocks*blockTokens || prof.LLMs[0].Engine.MaxNumSeqs != run.MaxNumSeqs {
			t.Fatalf("run %s: profile %+v", run.ID, prof.LLMs)
		}
		tr, err := formats.ReadInto[*formats.Trace](filepath.Join(sub, "trace.json"), nil)
		if err != nil {
			t.Fatal(err)
		}
		want := Trace(run, 7)
		if len(tr.Requests) != len(want.Requests) || tr.HashBlockTokens != want.HashBlockTokens {
			t.Fatalf("run %s: %d requests, block %d; want %d, %d", run.ID, len(tr.Requests), tr.HashBlockTokens, len(want.Requests), want.HashBlockTokens)
		}
		for i := range tr.Requests {
			g, w := tr.Requests[i], want.Requests[i]
			if g.TimeUs != w.TimeUs || g.PrefixGroup != w.PrefixGroup || len(g.Hashes()) != len(w.Hashes()) {
				t.Fatalf("run %s: request %d %+v, want %+v", run.ID, i, g, w)
			}
		}
	}
	for id, want := range map[string]string{"17": "17", "a/b": "a_b", "..": "_..", "../up": ".._up", "x y": "x_y"} {
		if got := fileSafe(id); got != want {
			t.Errorf("fileSafe(%q) = %q, want %q", id, got, want)
		}
	}
	dup := []Run{runs[0], runs[0]}
	dup[0].ID, dup[1].ID = "a/b", "a_b"
	if err := WriteInputs(t.TempDir(), dup, 1); err == nil || !strings.Contains(err.Error(), `runs "a/b" and "a_b" would share run-a_b`) {
		t.Fatalf("error %v, want the shared directory named", err)
	}
}
