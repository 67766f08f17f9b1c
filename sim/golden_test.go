package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestGoldenReport pins the full report of a small sweep, so any change in dispatch,
// arrivals or metrics shows up as a diff (regenerate with go test ./sim -update).
func TestGoldenReport(t *testing.T) {
	cfg := sweepCfg(t, 0)
	rep, err := Sweep(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("..", "testdata", "sim", "golden", "mixed-bursty-report.json")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./sim -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("report differs from %s (run go test ./sim -update and review the diff)", path)
	}
}
