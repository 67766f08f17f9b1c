package qlm

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
	"github.com/plan-dev/plan/planner"
)

// tpInputs reads testdata/qlm/tp: Llama-3-70B profiled at tensor parallelism 2 and Mistral-7B
// at 1, on two servers of two A100s.
func tpInputs(t *testing.T) planner.Inputs {
	t.Helper()
	in := fixtureInputs(t, "tp/workload.yaml", "tp/cluster.yaml", "tp/profile.json")
	in.Refs = []formats.InputRef{{Kind: formats.KindProfile, Path: "tp/profile.json", Digest: "sha256:" + strings.Repeat("0", 64)}}
	return in
}

// TestTensorParallel: a profile with gpu_count 2 plans as one instance on two GPUs of one
// server (before, "no LLM profile fits any GPU type of the cluster"); the
// one-GPU model takes the GPUs left, one instance each.
func TestTensorParallel(t *testing.T) {
	cases := []struct {
		name     string
		strategy string
		want     []qlmsec.QLMInstance // name, gpu, count, gpus, model
	}{
		{"load", "load", []qlmsec.QLMInstance{
			{Name: "llm-0", GPU: "A100", GPUCount: 2, GPUs: []int{0, 1}, Model: "llama-3-70b"},
			{Name: "llm-1", GPU: "A100", GPUCount: 1, GPUs: []int{2}, Model: "mistral-7b"},
			{Name: "llm-2", GPU: "A100", GPUCount: 1, GPUs: []int{3}, Model: "mistral-7b"}}},
		{"round-robin", "round-robin", []qlmsec.QLMInstance{
			{Name: "llm-0", GPU: "A100", GPUCount: 2, GPUs: []int{0, 1}, Model: "llama-3-70b"},
			{Name: "llm-1", GPU: "A100", GPUCount: 1, GPUs: []int{2}, Model: "mistral-7b"},
			{Name: "llm-2", GPU: "A100", GPUCount: 1, GPUs: []int{3}, Model: "mistral-7b"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Solve(tpInputs(t), Options{Flags: Flags{Strategy: tc.strategy}, Sim: testSim})
			if err != nil {
				t.Fatal(err)
			}
			got := qlmsec.PlanOf(p).Instances
			if len(got) != len(tc.want) {
				t.Fatalf("%d instances %+v, want %+v", len(got), got, tc.want)
			}
			for i, w := range tc.want {
				g := got[i]
				if g.Name != w.Name || g.GPU != w.GPU || g.GPUCount != w.GPUCount || !slices.Equal(g.GPUs, w.GPUs) || g.Model != w.Model {
					t.Errorf("instance %d: %+v, want %+v", i, g, w)
				}
			}
			if probs := Verify(p); len(probs) > 0 {
				t.Errorf("verify: %v", probs)
			}
			if errs := p.Validate(intree.Sections()); errs != nil {
				t.Errorf("validate: %v", errs)
			}
		})
	}
}

// TestTensorParallelTwoInstances: with two servers of three GPUs and most of the load on the
// 70B model (8 req/s: one 2-GPU instance serves about 6.1 req/s of its class within the
// SLO in simulation, so two carry it and one cannot),
// D'Hondt gives it a second 2-GPU instance; the GPUs of every instance are
// distinct and on one server, and none is left idle.
func TestTensorParallelTwoInstances(t *testing.T) {
	in := tpInputs(t)
	in.Cluster.GPUs[0].Count, in.Cluster.GPUs[0].PerServer = 6, 3
	llmspec.ClassesOf(in.Workload)[0].RateRPS = 8
	p, err := Solve(in, Options{Sim: testSim})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	tp := 0
	for _, x := range qlmsec.PlanOf(p).Instances {
		for _, g := range x.GPUs {
			if seen[g] || g/3 != x.GPUs[0]/3 {
				t.Fatalf("GPU %d in two instances, or an instance across servers: %+v", g, qlmsec.PlanOf(p).Instances)
			}
			seen[g] = true
		}
		if x.GPUCount == 2 {
			tp++
		}
	}
	if tp != 2 || len(seen) != 6 {
		t.Errorf("instances %+v: want two 2-GPU llama instances, all 6 GPUs used", qlmsec.PlanOf(p).Instances)
	}
}

// TestTensorParallelBadInput: a tensor-parallel size no server holds, or weights beyond the
// instance's memory, is an input error naming the profile file, the field and the value.
func TestTensorParallelBadInput(t *testing.T) {
	cases := []struct {
		name string
		edit func(in *planner.Inputs)
		want []string
	}{
		{"tp beyond a server", func(in *planner.Inputs) { in.Profiles[0].LLMs[0].GPUCount = 4 },
			[]string{"llm_classes[0].model: llama-3-70b: no LLM profile fits", "tp/profile.json: llms[0].gpu_count: 4: tensor parallelism over 4 GPUs, but no server of the cluster has more than 2 A100 GPUs"}},
		{"weights beyond two GPUs", func(in *planner.Inputs) { in.Profiles[0].LLMs[0].WeightBytes = 170e9 },
			[]string{"tp/profile.json: llms[0].gpu_count: 2: weights of 170000000000 bytes exceed 2 A100 GPUs' memory"}},
		{"no room for one of each", func(in *planner.Inputs) { in.Cluster.GPUs[0].Count = 2 },
			[]string{"cluster: gpus: no 1 free A100 GPUs on one server for an instance of mistral-7b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tpInputs(t)
			tc.edit(&in)
			_, err := Solve(in, Options{Sim: testSim})
			if !errors.Is(err, planner.ErrInput) {
				t.Fatalf("err %v: want an input error", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err %q: want %q", err, w)
				}
			}
		})
	}
}
