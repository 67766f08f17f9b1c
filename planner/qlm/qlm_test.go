package qlm

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
	"github.com/plan-dev/plan/planner"
)

// inputs are testdata/qlm's bundled example (its workload, cluster and profile), without
// input references.
func inputs(t *testing.T) planner.Inputs {
	in := fixtureInputs(t, "workload.yaml", "cluster.yaml", "profile.json")
	in.Refs = nil
	return in
}

func TestBundledExample(t *testing.T) {
	in := inputs(t)
	p, err := Solve(in, Options{Sim: testSim})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(qlmsec.PlanOf(p).Instances); got != 2 {
		t.Fatalf("%d instances, want 2", got)
	}
	models := map[string]bool{}
	for _, i := range qlmsec.PlanOf(p).Instances {
		models[i.Model] = true
	}
	if !models["mistral-7b"] || !models["vicuna-13b"] {
		t.Errorf("placement %v: want both models resident", models)
	}
	if probs := Verify(p); len(probs) > 0 {
		t.Errorf("verify: %v", probs)
	}
	if errs := p.Validate(intree.Sections()); errs != nil {
		t.Errorf("validate: %v", errs)
	}
}

// TestBadInput: each bad input is an InputError naming the field.
func TestBadInput(t *testing.T) {
	cases := []struct {
		name string
		edit func(in *planner.Inputs)
		want string
	}{
		{"no profile", func(in *planner.Inputs) { llmspec.ClassesOf(in.Workload)[0].Model = "gpt-x" }, "llm_classes[0].model: gpt-x: no LLM profile"},
		{"slo below prefill", func(in *planner.Inputs) { llmspec.ClassesOf(in.Workload)[1].SLO = formats.Duration(time.Millisecond) }, "llm_classes[1].slo"},
		{"model larger than GPU", func(in *planner.Inputs) { in.Cluster.GPUs[0].MemoryBytes = 20e9 }, "weights of 26000000000 bytes exceed"},
		// A cluster may leave memory_bytes out for a known GPU type: the type's memory
		// (80 GiB for an A100) still bounds the weights, which name their profile field.
		{"model larger than a known GPU", func(in *planner.Inputs) {
			in.Cluster.GPUs[0].MemoryBytes = 0
			in.Profiles[0].LLMs[0].WeightBytes = 100e9
		}, "weights of 100000000000 bytes exceed the A100's memory (85899345920 bytes; profile 1: llms[0].weight_bytes)"},
		{"bad strategy", nil, "--strategy"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := inputs(t)
			strategy := ""
			if c.edit != nil {
				c.edit(&in)
			} else {
				strategy = "nope"
			}
			_, err := Solve(in, Options{Flags: Flags{Strategy: strategy}, Sim: testSim})
			if !errors.Is(err, planner.ErrInput) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v: want an input error containing %q", err, c.want)
			}
		})
	}
}

// TestBadTokenStats: non-positive or non-finite token statistics in the bundled workload are
// rejected when it is read, naming the file, the field and the value.
func TestBadTokenStats(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "testdata", "qlm", "workload.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ from, to, want string }{
		{"output_tokens: {mean: 250, std: 150, max: 1024}", "output_tokens: {mean: .nan, std: 150, max: 1024}", "llm_classes[0].output_tokens.mean: NaN: must be a finite number"},
		{"input_tokens: {mean: 150, std: 100, max: 2048}", "input_tokens: {mean: 150, std: .inf, max: 2048}", "llm_classes[0].input_tokens.std: +Inf: must be a finite number"},
		{"input_tokens: {mean: 150, std: 100, max: 2048}", "input_tokens: {mean: -3, std: 100, max: 2048}", "llm_classes[0].input_tokens.mean: -3: must be > 0"},
		{"output_tokens: {mean: 250, std: 150, max: 1024}", "output_tokens: {mean: 250, std: 150, max: 0}", "llm_classes[0].output_tokens.max: 0: must be >= 1"},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			if !strings.Contains(string(src), c.from) {
				t.Fatalf("bundled workload lacks %q", c.from)
			}
			path := filepath.Join(t.TempDir(), "workload.yaml")
			if err := os.WriteFile(path, []byte(strings.Replace(string(src), c.from, c.to, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := formats.ReadInto[*formats.Workload](path, &formats.SectionSet{Workload: []formats.Section{llmspec.WorkloadSection}})
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v: want %s naming %q", err, path, c.want)
			}
		})
	}
}
