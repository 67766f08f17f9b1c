package demo_test

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/internal/onformats/demo"
	"github.com/plan-dev/plan/profiler"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestProfileUpToDate fails when the committed profile.json drifts from what the profiler
// generates for the demo cluster; `go test ./internal/onformats/demo -update` regenerates it.
func TestProfileUpToDate(t *testing.T) {
	c, err := demo.Cluster()
	if err != nil {
		t.Fatal(err)
	}
	p, err := profiler.DemoProfile(c)
	if err != nil {
		t.Fatal(err)
	}
	want, err := formats.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := formats.WriteFile("profile.json", p, intree.Sections()); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile("profile.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("internal/onformats/demo/profile.json is out of date: run go test ./internal/onformats/demo -update")
	}
}

func TestProfile(t *testing.T) {
	p, err := demo.Profile()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Models) != 1 {
		t.Fatalf("%d models", len(p.Models))
	}
	m := &p.Models[0]
	l4, ok1 := m.Lookup("L4", 1, 1)
	p4, ok2 := m.Lookup("P4", 1, 1)
	if !ok1 || !ok2 {
		t.Fatal("missing L4/P4 batch-1 entries")
	}
	// The demo must give the planner something to do: P4 relatively close to L4 on the
	// early (bandwidth-bound) blocks and much slower on the late (compute-bound) ones.
	first := p4.BlockUs[0] / l4.BlockUs[0]
	last := p4.BlockUs[len(p4.BlockUs)-1] / l4.BlockUs[len(l4.BlockUs)-1]
	t.Logf("L4 b=1: %.2f ms; P4/L4 first block %.2f, last block %.2f", l4.WholeUs()/1000, first, last)
	if last < 1.5*first {
		t.Errorf("P4/L4 ratio: first block %.2f, last %.2f: want a clear difference", first, last)
	}
	if ms := l4.WholeUs() / 1000; ms < 2 || ms > 20 {
		t.Errorf("L4 batch-1 latency %.2f ms: want several ms", ms)
	}
	if _, ok := m.Lookup("P4", 2, 1); ok {
		t.Error("P4 has vGPU 2 entries; the demo cluster runs P4 whole")
	}
	if _, ok := m.Lookup("L4", 4, 2); !ok {
		t.Error("L4 v=4 b=2 missing")
	}
}
