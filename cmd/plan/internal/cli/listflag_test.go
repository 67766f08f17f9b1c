package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestListFlagsAccumulate: every comma-list flag keeps all of its repeats (a plain string
// flag kept only the last one), and a single value still replaces the default.
func TestListFlagsAccumulate(t *testing.T) {
	cases := []struct {
		cmd, flag string
		args      []string
		want      string
	}{
		{"profile", "zoo", []string{"--zoo", "resnet50", "--zoo", "bert-base"}, "resnet50,bert-base"},
		{"profile", "zoo", []string{"--zoo", "resnet50,bert-base", "--zoo", "resnet101"}, "resnet50,bert-base,resnet101"},
		{"profile", "llm", []string{"--llm", "mistral-7b", "--llm", "llama-2-70b"}, "mistral-7b,llama-2-70b"},
		{"profile", "tp", []string{"--tp", "1", "--tp", "2,4"}, "1,2,4"},
		{"profile", "batch", []string{"--batch", "1-2", "--batch", "8"}, "1-2,8"},
		{"profile", "vgpu", []string{"--vgpu", "1", "--vgpu", "4"}, "1,4"},
		{"frontier", "rate", []string{"--rate", "1", "--rate", "2"}, "1,2"},
		{"frontier", "slo", []string{"--slo", "200ms", "--slo", "400ms"}, "200ms,400ms"},
		{"frontier", "accuracy", []string{"--accuracy", "0.8", "--accuracy", "0.9"}, "0.8,0.9"},
		{"simulate", "load", []string{"--load", "0.5", "--load", "1"}, "0.5,1"},
		{"simulate", "load", []string{"--load", "0.5"}, "0.5"},
		{"simulate", "rate-scale", []string{"--rate-scale", "1", "--rate-scale", "2"}, "1,2"},
		{"load", "metric-percentiles", []string{"--metric-percentiles", "50", "--metric-percentiles", "99"}, "50,99"},
		{"load", "percentile-metrics", []string{"--percentile-metrics", "ttft", "--percentile-metrics", "tpot"}, "ttft,tpot"},
	}
	for _, c := range cases {
		t.Run(c.cmd+" "+strings.Join(c.args, " "), func(t *testing.T) {
			root, _ := NewRoot(Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}})
			cmd, _, err := root.Find([]string{c.cmd})
			if err != nil || cmd.Name() != c.cmd {
				t.Fatalf("no command %s: %v", c.cmd, err)
			}
			if err := cmd.Flags().Parse(c.args); err != nil {
				t.Fatal(err)
			}
			if got := cmd.Flags().Lookup(c.flag).Value.String(); got != c.want {
				t.Errorf("--%s = %q, want %q", c.flag, got, c.want)
			}
		})
	}
}

// TestProfileZooRepeated: `--zoo a --zoo b` and `--zoo a,b` both profile both models.
func TestProfileZooRepeated(t *testing.T) {
	for _, args := range [][]string{
		{"--zoo", "resnet50", "--zoo", "bert-base"},
		{"--zoo", "resnet50,bert-base"},
		{"--zoo", "resnet50,bert-base", "--zoo", "resnet50"}, // a repeat profiles once
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "p.json")
			all := append([]string{"profile", "--gpu", "T4", "--batch", "1", "--vgpu", "1", "-o", out, "-q"}, args...)
			if code, _, stderr := rootRun(t, all...); code != ExitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Models []struct {
					Name string `json:"name"`
				} `json:"models"`
			}
			if err := json.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, m := range doc.Models {
				names = append(names, m.Name)
			}
			if len(names) != 2 {
				t.Errorf("models %v, want resnet50 and bert-base", names)
			}
		})
	}
}
