package vllmruns

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/plan-dev/plan/formats"
)

// WriteInputs writes, under dir, what each run replays: DIR/run-ID/profile.json (the
// profile Profile builds, the engine block the run's settings) and DIR/run-ID/trace.json
// (Trace at seed), so `plan simulate --llm --profile P --trace T` replays a run outside the
// bench exactly as the bench does. Both are validated before they are written.
func WriteInputs(dir string, runs []Run, seed uint64) error {
	seen := map[string]string{}
	for _, run := range runs {
		name := "run-" + fileSafe(run.ID)
		if other, dup := seen[name]; dup {
			return fmt.Errorf("--report %s: runs %q and %q would share %s", dir, other, run.ID, name)
		}
		seen[name] = run.ID
		prof, _, err := Profile(run, nil)
		if err != nil {
			return err
		}
		sub := filepath.Join(dir, name)
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return fmt.Errorf("--report %s: %v", dir, err)
		}
		doc := &formats.Profile{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindProfile}, LLMs: []formats.LLMProfile{prof}}
		doc.Metadata.Name = "run-" + run.ID
		doc.Metadata.Description = "plan bench vllm-runs: " + run.Label() + " as run " + run.ID + " served"
		if err := formats.WriteFile(filepath.Join(sub, "profile.json"), doc, nil); err != nil {
			return err
		}
		if err := formats.WriteFile(filepath.Join(sub, "trace.json"), Trace(run, seed), nil); err != nil {
			return err
		}
	}
	return nil
}

// fileSafe is a run id as one path element: every byte outside [A-Za-z0-9._-] becomes '_',
// and an id of dots only is prefixed, so no id names a parent or another directory.
func fileSafe(id string) string {
	s := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '_'
	}, id)
	if strings.Trim(s, ".") == "" {
		s = "_" + s
	}
	return s
}
