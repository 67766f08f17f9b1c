package pard

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
)

var update = flag.Bool("update", false, "rewrite testdata/pard from the Go definitions")

// TestTestdataInSync keeps testdata/pard (the CLI's copies) equal to the Go definitions and
// checks that they validate.
func TestTestdataInSync(t *testing.T) {
	files := map[string]any{
		"workload.json": Workload(DefaultRateRPS),
		"profile.json":  Profile(),
		"cluster.json":  Cluster(),
	}
	for name, v := range files {
		path := filepath.Join("..", "..", "..", "..", "testdata", "pard", name)
		want, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, '\n')
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./internal/onformats/demo/pard -update)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is out of date: run go test ./internal/onformats/demo/pard -update", path)
		}
	}
	if errs := Workload(DefaultRateRPS).Validate(intree.Sections()); len(errs) > 0 {
		t.Errorf("workload: %v", errs)
	}
	if errs := Profile().Validate(); len(errs) > 0 {
		t.Errorf("profile: %v", errs)
	}
	if errs := Cluster().Validate(); len(errs) > 0 {
		t.Errorf("cluster: %v", errs)
	}
	if _, err := formats.ReadInto[*formats.Workload](filepath.Join("..", "..", "..", "..", "testdata", "pard", "workload.json"), intree.Sections()); err != nil {
		t.Error(err)
	}
}

// TestLVRuleOfThumb checks the latency rule's worked example: lv at batch 8 needs Σ2·d = 368
// ms ≤ 400 ms.
func TestLVRuleOfThumb(t *testing.T) {
	a, _ := AppByName("lv")
	var sum float64
	for _, m := range a.Modules {
		sum += 2 * (m.Type.A + m.Type.C*8)
	}
	if sum != 368 {
		t.Errorf("lv Σ2·d(8) = %g ms, want 368", sum)
	}
}
