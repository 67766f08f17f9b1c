package qlm

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/planner"
)

func inputs(t *testing.T) planner.Inputs {
	dir := filepath.Join("..", "..", "testdata", "qlm")
	w, err := formats.ReadInto[*formats.Workload](filepath.Join(dir, "workload.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := formats.ReadInto[*formats.Cluster](filepath.Join(dir, "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := formats.ReadInto[*formats.Profile](filepath.Join(dir, "profile.json"))
	if err != nil {
		t.Fatal(err)
	}
	return planner.Inputs{Workload: w, Cluster: c, Profiles: []*formats.Profile{p}}
}

func TestBundledExample(t *testing.T) {
	in := inputs(t)
	p, err := Solve(in, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := len(p.QLM.Instances); got != 2 {
		t.Fatalf("%d instances, want 2", got)
	}
	models := map[string]bool{}
	for _, i := range p.QLM.Instances {
		models[i.Model] = true
	}
	if !models["mistral-7b"] || !models["vicuna-13b"] {
		t.Errorf("placement %v: want both models resident", models)
	}
	if probs := Verify(p); len(probs) > 0 {
		t.Errorf("verify: %v", probs)
	}
	if errs := p.Validate(); errs != nil {
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
		{"no profile", func(in *planner.Inputs) { in.Workload.LLMClasses[0].Model = "gpt-x" }, "llm_classes[0].model: gpt-x: no LLM profile"},
		{"slo below prefill", func(in *planner.Inputs) { in.Workload.LLMClasses[1].SLO = formats.Duration(time.Millisecond) }, "llm_classes[1].slo"},
		{"model larger than GPU", func(in *planner.Inputs) { in.Cluster.GPUs[0].MemoryBytes = 20e9 }, "weights of 26000000000 bytes exceed"},
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
			_, err := Solve(in, strategy)
			if !errors.Is(err, planner.ErrInput) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v: want an input error containing %q", err, c.want)
			}
		})
	}
}
