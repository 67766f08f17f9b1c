package qlmbench

import (
	"github.com/plan-dev/plan/internal/onformats/benchapi"

	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
)

// TestEmbeddedData: the embedded trace is the whole Azure conversation trace (19,366 data
// lines: the data README's 19,365 is one short) and the
// embedded profile is byte-identical to testdata/qlm/profile.json (the copy travels in the
// binary).
func TestEmbeddedData(t *testing.T) {
	rows, err := LoadTrace("")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 19366 {
		t.Errorf("embedded trace: %d requests, want 19,366 (every line after the header)", len(rows))
	}
	want, err := os.ReadFile("../../testdata/qlm/profile.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(embeddedProfile, want) {
		t.Error("data/profile.json differs from testdata/qlm/profile.json: copy it again")
	}
	if _, err := LoadProfile(""); err != nil {
		t.Fatal(err)
	}
	notice, err := os.ReadFile("data/NOTICE")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"CC-BY 4.0", "Splitwise", "ISCA"} {
		if !bytes.Contains(notice, []byte(w)) {
			t.Errorf("NOTICE lacks %q", w)
		}
	}
}

// TestRunReportsProgress: every replay step reports progress through env.Progressf (shown
// only on a terminal).
func TestRunReportsProgress(t *testing.T) {
	var steps []string
	var out bytes.Buffer
	env := benchapi.Env{Out: &out, Err: io.Discard, Infof: func(string, ...any) {},
		Table:    func([]string, [][]string) {},
		Progress: func(f string, a ...any) { steps = append(steps, fmt.Sprintf(f, a...)) }}
	c := &Command{quick: true, workload: "single", policies: []string{"qlm", "qlm-edf"}, speedup: 0.5, share: 0.2, minutes: 10}
	if err := c.Run(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 || !strings.Contains(steps[1], "2/2") || !strings.Contains(steps[1], "qlm-edf") {
		t.Errorf("progress %q, want one step per policy", steps)
	}
}
