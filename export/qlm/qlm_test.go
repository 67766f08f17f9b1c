package qlm

import (
	"bytes"
	"flag"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	dllm "github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/export"
	"github.com/plan-dev/plan/export/exporttest"
	"github.com/plan-dev/plan/export/gateway"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
	"github.com/plan-dev/plan/profiler/llm"
)

var update = flag.Bool("update", false, "rewrite testdata/export/qlm golden files")

// planFile is the bundled example's plan (plan solve --deterministic of testdata/qlm:
// Mistral-7B chat and batch classes and a Vicuna-13B chat class on two A100s).
const (
	planFile  = "../../testdata/export/qlm/plan.json"
	goldenDir = "../../testdata/export/qlm"
)

func readPlan(t testing.TB) *formats.Plan {
	t.Helper()
	return exporttest.ReadPlan(t, planFile)
}

func exporter(t testing.TB, target string) export.Exporter {
	return exporttest.Exporter(t, Exporters(), target)
}

// check compares a read-back plan with p: the qlm section (instances with their virtual
// queues, groups, replan interval), the policy, the classes of the embedded workload, and
// the GPUs each instance runs on (gpus, by instance name).
func check(t *testing.T, got *Exported, p *formats.Plan, gpus map[string][]int) {
	t.Helper()
	if !reflect.DeepEqual(got.Plan, qlmsec.PlanOf(p)) {
		t.Errorf("read back:\n%+v\nplan:\n%+v", got.Plan, qlmsec.PlanOf(p))
	}
	if got.Policy != "qlm" || got.Params["delta"] != DefaultDelta || got.Params["confidence"] != DefaultConfidence {
		t.Errorf("policy %q, params %v: want qlm with δ = 4, Δ = 0.95", got.Policy, got.Params)
	}
	if !reflect.DeepEqual(got.Classes, llmspec.ClassesOf(p.Provenance.Embedded.Workload)) {
		t.Errorf("classes read back:\n%+v\nworkload:\n%+v", got.Classes, llmspec.ClassesOf(p.Provenance.Embedded.Workload))
	}
	if !reflect.DeepEqual(got.GPUs, gpus) {
		t.Errorf("GPUs read back %v, want %v", got.GPUs, gpus)
	}
}

// saysUnsupported: every file but model.json (the engine takes its keys as arguments) and the
// empty .keep names what the target cannot express.
func saysUnsupported(t *testing.T, files export.Files) {
	t.Helper()
	for _, n := range files.Names() {
		if b := path.Base(n); b == export.VLLMModelFile || b == ".keep" || export.IsDeploy(n) {
			continue
		}
		if !bytes.Contains(files[n], []byte("virtual queues and their re-plans")) || !bytes.Contains(files[n], []byte("warm start")) {
			t.Errorf("%s does not say what the target cannot express", n)
		}
	}
}

// goldenExport exports p to target under name, checks the files against the target's
// schemas and the goldens in dir/<target>/ (rewritten under -update) and that each
// unsupported setting is said, and reads them back.
func goldenExport(t *testing.T, p *formats.Plan, target, name, dir string) (export.Files, *Exported) {
	t.Helper()
	files, err := exporter(t, target).Export(p, export.Options{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	if err := export.Validate(files); err != nil {
		t.Fatal(err)
	}
	exporttest.Golden(t, filepath.Join(dir, target), files, *update, "./export/qlm")
	saysUnsupported(t, files)
	got, err := ReadBack(target, files)
	if err != nil {
		t.Fatal(err)
	}
	return files, got
}

// TestGolden compares every target's files with testdata/export/qlm/<target>/ after checking
// them against the targets' schemas, then reads them back into the plan's qlm section.
func TestGolden(t *testing.T) {
	p := readPlan(t)
	for _, target := range export.Targets {
		t.Run(target, func(t *testing.T) {
			_, got := goldenExport(t, p, target, "qlm-demo", goldenDir)
			check(t, got, p, map[string][]int{"llm-0": {0}, "llm-1": {1}})
		})
	}
}

// TestEngines: the engines are sized from the profiles — KV cache to the profiled capacity,
// the context to the longest class, swap space only where the profile swaps — and every
// target carries the same engine arguments.
func TestEngines(t *testing.T) {
	p := readPlan(t)
	want := map[string]Engine{
		// (14.5 GB + 420 000 × 128 KiB + 2 GB) / 80 GB = 0.8944 → 0.895; 20 GB of swap = 18.62 GiB.
		"llm-0": {Model: "mistralai/Mistral-7B-Instruct-v0.2", TensorParallelSize: 1, GPUMemoryUtilization: 0.895, MaxNumSeqs: 256, MaxModelLen: 3072, MaxNumBatchedTokens: 4096, BlockSize: 16, SwapSpace: 18.62},
		// (26 GB + 54 000 × 800 KiB + 2 GB) / 80 GB = 0.9030 → 0.903; preempt_mode evict: no swap.
		"llm-1": {Model: "lmsys/vicuna-13b-v1.5", TensorParallelSize: 1, GPUMemoryUtilization: 0.903, MaxNumSeqs: 256, MaxModelLen: 3072, MaxNumBatchedTokens: 4096, BlockSize: 16},
	}
	for _, e := range Exporters() {
		files, err := e.Export(p, export.Options{})
		if err != nil {
			t.Fatal(err)
		}
		engines := map[string]Engine{}
		if e.Target == gateway.Name {
			// The inference gateway's Deployments carry the same engine flags (vllm.Args).
			got, err := gateway.ReadBack(files)
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range got.Instances {
				engines[in.Name] = in.Engine
			}
		} else {
			got, err := ReadBack(e.Target, files)
			if err != nil {
				t.Fatal(err)
			}
			engines = got.Engines
		}
		if !reflect.DeepEqual(engines, want) {
			t.Errorf("%s: engines %+v, want %+v", e.Target, engines, want)
		}
	}
}

// TestValidateEngine: a model.json with a field vLLM's engine does not take, or a negative
// count, fails the schema check naming the file.
func TestValidateEngine(t *testing.T) {
	files, err := exporter(t, export.Triton).Export(readPlan(t), export.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const f = "plan-llm-0/1/model.json"
	for _, tc := range [][2]string{{`"max_num_seqs"`, `"max_seqs"`}, {`"block_size": 16`, `"block_size": -16`}} {
		g := export.Files{}
		for k, v := range files {
			g[k] = v
		}
		g[f] = bytes.Replace(g[f], []byte(tc[0]), []byte(tc[1]), 1)
		if err := export.Validate(g); err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("%s → %s: Validate: %v, want an error naming %s", tc[0], tc[1], err, f)
		}
	}
}

// mixPlan is a hand-made plan on a mixed cluster: a tensor-parallel Vicuna-13B instance on
// two A100s after a single-GPU one, an L4 instance listed before the last A100 one (which
// takes the A100 left, GPU 3, as the L4 one takes GPU 4), an instance with an empty virtual
// queue, and no cluster memory for the L4 (vLLM's default memory share).
func mixPlan(t *testing.T) *formats.Plan {
	t.Helper()
	p := readPlan(t)
	e := *p.Provenance.Embedded
	c := &formats.Cluster{GPUs: []formats.GPUPool{{Type: "A100", Count: 4, MemoryBytes: 80e9}, {Type: "L4", Count: 1}}}
	prof := e.Profiles[0]
	prof.LLMs = slices.Clone(prof.LLMs)
	var mistral, vicuna formats.LLMProfile
	for _, l := range prof.LLMs {
		switch l.Model {
		case "mistral-7b":
			mistral = l
		case "vicuna-13b":
			vicuna = l
		}
	}
	tp := vicuna
	tp.GPUCount, tp.KVCapacityTokens, tp.Iteration = 2, 140000, nil
	l4 := mistral
	l4.GPU, l4.KVCapacityTokens = "L4", 39000
	prof.LLMs = append(prof.LLMs, tp, l4)
	e.Profiles = []formats.Profile{prof}
	e.Cluster = c
	p.Provenance.Embedded = &e
	p.Cluster = c
	qlmsec.SetPlan(p, &qlmsec.QLMPlan{ReplanMs: 250,
		Instances: []qlmsec.QLMInstance{
			{Name: "m0", GPU: "A100", GPUCount: 1, Model: "mistral-7b", Queue: []string{"rg-mistral-chat"}},
			{Name: "v01", GPU: "A100", GPUCount: 2, Model: "vicuna-13b", Queue: []string{"rg-vicuna-chat"}},
			{Name: "l4", GPU: "L4", GPUCount: 1, Model: "mistral-7b", Queue: []string{"rg-mistral-batch"}},
			{Name: "idle", GPU: "A100", GPUCount: 1, Model: "mistral-7b"},
		},
		Groups: qlmsec.PlanOf(p).Groups})
	return p
}

// TestShapes: the mixed plan round-trips through every target; Triton pins single-GPU
// instances and runs the tensor-parallel one as a KIND_MODEL group, KServe asks for two GPUs,
// Ray for num_gpus 2; the L4 engine leaves the memory share to vLLM.
func TestShapes(t *testing.T) {
	p := mixPlan(t)
	gpus := map[string][]int{"m0": {0}, "v01": {1, 2}, "l4": {4}, "idle": {3}}
	for _, target := range export.Targets {
		t.Run(target, func(t *testing.T) {
			files, err := exporter(t, target).Export(p, export.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := export.Validate(files); err != nil {
				t.Fatal(err)
			}
			saysUnsupported(t, files)
			got, err := ReadBack(target, files)
			if err != nil {
				t.Fatal(err)
			}
			check(t, got, p, gpus)
			if e := got.Engines["v01"]; e.TensorParallelSize != 2 || e.SwapSpace != 0 || e.MaxModelLen != 3072 {
				t.Errorf("v01 engine %+v: want tensor_parallel_size 2, no swap", e)
			}
			if e := got.Engines["l4"]; e.GPUMemoryUtilization != 0 {
				t.Errorf("l4 engine %+v: the cluster gives no L4 memory: want vLLM's default share", e)
			}
			switch target {
			case export.Triton:
				c, err := export.ParseTriton(files["plan-v01/config.pbtxt"])
				if err != nil || len(c.InstanceGroup) != 1 || c.InstanceGroup[0].Kind.String() != "KIND_MODEL" {
					t.Errorf("v01: want one KIND_MODEL group: %v %v", c, err)
				}
				c, err = export.ParseTriton(files["plan-l4/config.pbtxt"])
				if err != nil || len(c.InstanceGroup) != 1 || c.InstanceGroup[0].Name != "g4" || !slices.Equal(c.InstanceGroup[0].Gpus, []int32{0}) {
					t.Errorf("l4: want group g4 (plan GPU 4) pinned to the pod's GPU 0: %v %v", c, err)
				}
			case export.KServe:
				y := string(files["inferenceservice-plan-v01.yaml"])
				if !strings.Contains(y, `nvidia.com/gpu: "2"`) || !strings.Contains(y, "--tensor-parallel-size=2") || !strings.Contains(y, "nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB") {
					t.Errorf("v01: want 2 GPUs on A100 nodes:\n%s", y)
				}
			case export.Ray:
				y := string(files[export.RayConfigFile])
				if !strings.Contains(y, "num_gpus: 2") || !strings.Contains(y, "name: plan-router") {
					t.Errorf("want a 2-GPU deployment and the router:\n%s", y)
				}
			}
		})
	}
}

// TestPinnedGPUs: a plan that lists its instances' GPUs (planner/qlm's tensor-parallel plans)
// is exported on those GPUs, not the next free ones — here a one-GPU
// instance on GPU 1 before a two-GPU one on the second server's GPUs 2 and 3 — with the
// engine's model id from the profile's hf_model, and reads back with the same gpus.
func TestPinnedGPUs(t *testing.T) {
	p := mixPlan(t)
	c := &formats.Cluster{GPUs: []formats.GPUPool{{Type: "A100", Count: 4, PerServer: 2, MemoryBytes: 80e9}}}
	p.Cluster, p.Provenance.Embedded.Cluster = c, c
	qlmsec.PlanOf(p).Instances = []qlmsec.QLMInstance{
		{Name: "m1", GPU: "A100", GPUCount: 1, GPUs: []int{1}, Model: "mistral-7b", Queue: []string{"rg-mistral-chat", "rg-mistral-batch"}},
		{Name: "v23", GPU: "A100", GPUCount: 2, GPUs: []int{2, 3}, Model: "vicuna-13b", Queue: []string{"rg-vicuna-chat"}},
		{Name: "m0", GPU: "A100", GPUCount: 1, GPUs: []int{0}, Model: "mistral-7b"},
	}
	for _, target := range export.Targets {
		t.Run(target, func(t *testing.T) {
			files, err := exporter(t, target).Export(p, export.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := export.Validate(files); err != nil {
				t.Fatal(err)
			}
			got, err := ReadBack(target, files)
			if err != nil {
				t.Fatal(err)
			}
			check(t, got, p, map[string][]int{"m1": {1}, "v23": {2, 3}, "m0": {0}})
			if e := got.Engines["v23"]; e.TensorParallelSize != 2 || e.Model != "lmsys/vicuna-13b-v1.5" {
				t.Errorf("v23 engine %+v: want tensor_parallel_size 2 of lmsys/vicuna-13b-v1.5", e)
			}
		})
	}
}

// TestReadBackRejects: files whose native settings disagree with the recorded plan, or that
// lose part of it, are errors.
func TestReadBackRejects(t *testing.T) {
	p := readPlan(t)
	tests := []struct {
		target, file, old, new, want string
	}{
		{export.Triton, "plan-llm-1/config.pbtxt", "gpus: [ 0 ]", "gpus: [ 1 ]", "instance group g1 (KIND_GPU) on GPUs [1]"},
		{export.Triton, "plan-llm-0/1/model.json", `"tensor_parallel_size": 1`, `"tensor_parallel_size": 2`, "tensor_parallel_size 2"},
		{export.Triton, "plan-llm-0/1/model.json", `"model": "mistralai/Mistral-7B-Instruct-v0.2"`, `"model": "lmsys/vicuna-13b-v1.5"`, `the engine loads "lmsys/vicuna-13b-v1.5"`},
		{export.Triton, "plan-llm-0/1/model.json", `"block_size"`, `"block_tokens"`, `unknown field "block_tokens"`},
		{export.Triton, "plan-llm-1/config.pbtxt", "key: \"qlm.index\"\n  value { string_value: \"1\" }", "key: \"qlm.index\"\n  value { string_value: \"0\" }", "index 0 recorded twice"},
		{export.Triton, "plan-coordinator/config.pbtxt", `\"llm-1\":\"plan-llm-1\"`, `\"llm-1\":\"plan-llm-9\"`, `exported as plan-llm-1, the plan record says "plan-llm-9"`},
		{export.KServe, "inferenceservice-plan-llm-0.yaml", `nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB`, ``, `no node selector`},
		{export.KServe, "inferenceservice-plan-llm-0.yaml", `"gpus":2`, `"gpus":3`, "differs from another file's"},
		{export.KServe, "inferenceservice-plan-llm-1.yaml", `nvidia.com/gpu: "1"`, `nvidia.com/gpu: "2"`, "want the same GPU count"},
		{export.Ray, export.RayConfigFile, "num_gpus: 1", "num_gpus: 2", "the target's settings say 2 GPU(s)"},
		{export.Ray, export.RayConfigFile, "accelerator_type: A100", "accelerator_type: \"\"", `accelerator_type "": want whole GPUs of one type`},
		{export.Ray, export.RayConfigFile, "qlm.index: \"1\"", "qlm.index: \"2\"", "the indices are not 0..1"},
		{export.Ray, export.RayConfigFile, "- rg-vicuna-chat\n", "- rg-vicuna-talk\n", `queued group "rg-vicuna-talk" is not in the plan record's groups`},
	}
	for _, tc := range tests {
		t.Run(tc.target+"/"+tc.want, func(t *testing.T) {
			files, err := exporter(t, tc.target).Export(p, export.Options{})
			if err != nil {
				t.Fatal(err)
			}
			s := string(files[tc.file])
			if !strings.Contains(s, tc.old) {
				t.Fatalf("%s has no %q:\n%s", tc.file, tc.old, s)
			}
			files[tc.file] = []byte(strings.Replace(s, tc.old, tc.new, 1))
			if _, err := ReadBack(tc.target, files); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
	// A Triton instance without its engine arguments.
	files, err := exporter(t, export.Triton).Export(p, export.Options{})
	if err != nil {
		t.Fatal(err)
	}
	delete(files, "plan-llm-0/1/model.json")
	if _, err := ReadBack(export.Triton, files); err == nil || !strings.Contains(err.Error(), "no plan-llm-0/1/model.json beside it") {
		t.Errorf("no model.json: err %v", err)
	}
}

// TestBadPlans: plans the exporter cannot lay out fail with the field at fault.
func TestBadPlans(t *testing.T) {
	tests := []struct {
		name string
		edit func(p *formats.Plan)
		want string
	}{
		{"no qlm", func(p *formats.Plan) { qlmsec.SetPlan(p, nil) }, "no qlm section"},
		{"no workload", func(p *formats.Plan) { p.Provenance.Embedded = nil }, "provenance.embedded.workload.llm_classes: missing"},
		{"no cluster", func(p *formats.Plan) { p.Cluster, p.Provenance.Embedded.Cluster = nil, nil }, "cluster: missing"},
		{"no model", func(p *formats.Plan) { qlmsec.PlanOf(p).Instances[1].Model = "" }, "qlm.instances[1].model: empty"},
		{"no profile", func(p *formats.Plan) { qlmsec.PlanOf(p).Instances[1].Model = "llama-70b" }, `qlm.instances[1].model: "llama-70b": no LLM profile on 1×A100`},
		{"gpu count", func(p *formats.Plan) { qlmsec.PlanOf(p).Instances[1].GPUCount = 2 }, "qlm.instances[1].gpu_count: 2 A100 GPU(s): only 1 of the cluster's A100 GPUs are left"},
		{"tp profile", func(p *formats.Plan) { qlmsec.PlanOf(p).Instances[0].GPUCount = 2 }, `qlm.instances[0].model: "mistral-7b": no LLM profile on 2×A100`},
		{"gpu type", func(p *formats.Plan) { qlmsec.PlanOf(p).Instances[0].GPU = "H100" }, "qlm.instances[0].gpu_count: 1 H100 GPU(s): only 0"},
		{"queue", func(p *formats.Plan) { qlmsec.PlanOf(p).Instances[0].Queue[1] = "rg-x" }, `qlm.instances[0].queue[1]: "rg-x": not in qlm.groups`},
		{"duplicate", func(p *formats.Plan) { qlmsec.PlanOf(p).Instances[1].Name = "llm-0" }, `qlm.instances[1].name: "llm-0": duplicate instance`},
		{"unit clash", func(p *formats.Plan) { qlmsec.PlanOf(p).Instances[1].Name = "LLM_0" }, `qlm.instances[1].name: "LLM_0": exported as plan-llm-0, as is instance llm-0`},
		{"router clash", func(p *formats.Plan) { qlmsec.PlanOf(p).Instances[1].Name = "router" }, `qlm.instances[1].name: "router": exported as plan-router, as is the router`},
		{"memory", func(p *formats.Plan) { p.Cluster.GPUs[0].MemoryBytes = 40e9 }, "qlm.instances[0]: model mistral-7b: weights, 420000 KV tokens and activations need"},
		{"no model id", renameVicuna, "provenance.embedded.profiles[0].llms[1].hf_model: missing: the engine needs model my-13b's Hugging Face id"},
		{"placeholder id", func(p *formats.Plan) { p.Provenance.Embedded.Profiles[0].LLMs[0].HFModel = "<your-model>" },
			`provenance.embedded.profiles[0].llms[0].hf_model: "<your-model>": a placeholder`},
		{"pinned gpu count", func(p *formats.Plan) { qlmsec.PlanOf(p).Instances[1].GPUs = []int{0, 1} }, "qlm.instances[1].gpus: [0 1]: 2 GPUs for gpu_count 1"},
		{"pinned gpu taken", func(p *formats.Plan) { qlmsec.PlanOf(p).Instances[1].GPUs = []int{0} }, "qlm.instances[1].gpus[0]: 0: taken by another instance"},
		{"pinned gpu range", func(p *formats.Plan) { qlmsec.PlanOf(p).Instances[0].GPUs = []int{7} }, "qlm.instances[0].gpus[0]: 7: the cluster has GPUs 0..1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := readPlan(t)
			tc.edit(p)
			for _, e := range Exporters() {
				if _, err := e.Export(p, export.Options{}); err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: err %v, want %q", e.Target, err, tc.want)
				}
			}
		})
	}
}

// renameVicuna makes the plan's Vicuna-13B a model of the user's, "my-13b", with no
// hf_model: a model no catalogue knows.
func renameVicuna(p *formats.Plan) {
	e := p.Provenance.Embedded
	for i := range e.Profiles[0].LLMs {
		if l := &e.Profiles[0].LLMs[i]; l.Model == "vicuna-13b" {
			l.Model, l.HFModel = "my-13b", ""
		}
	}
	for i := range llmspec.ClassesOf(e.Workload) {
		if c := &llmspec.ClassesOf(e.Workload)[i]; c.Model == "vicuna-13b" {
			c.Model = "my-13b"
		}
	}
	for i := range qlmsec.PlanOf(p).Instances {
		if in := &qlmsec.PlanOf(p).Instances[i]; in.Model == "vicuna-13b" {
			in.Model = "my-13b"
		}
	}
	for i := range qlmsec.PlanOf(p).Groups {
		if g := &qlmsec.PlanOf(p).Groups[i]; g.Model == "vicuna-13b" {
			g.Model = "my-13b"
		}
	}
}

// TestKnownModels: a profile of a model of `plan profile --llm`'s catalogue that gives no
// hf_model (a plan solved before hf_model existed, or from the roofline profiler) exports
// with the model's known id; every catalogue model has one.
func TestKnownModels(t *testing.T) {
	for _, m := range llm.Names() {
		if knownID(m) == "" {
			t.Errorf("profiler/llm's %s has no known id", m)
		}
	}
	p := readPlan(t)
	for i := range p.Provenance.Embedded.Profiles[0].LLMs {
		p.Provenance.Embedded.Profiles[0].LLMs[i].HFModel = ""
	}
	files, err := exporter(t, export.KServe).Export(p, export.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadBack(export.KServe, files)
	if err != nil {
		t.Fatal(err)
	}
	if got.Engines["llm-0"].Model != KnownModels["mistral-7b"] || got.Engines["llm-1"].Model != KnownModels["vicuna-13b"] {
		t.Errorf("engines %+v: want the catalogue's ids", got.Engines)
	}
}

// FuzzReadBack: the read-back decoders never panic on arbitrary files (seeded with the
// exports of the bundled plan and of a disaggregated one: role units of two replicas).
func FuzzReadBack(f *testing.F) {
	for _, p := range []*formats.Plan{readPlan(f), rolePlan(f)} {
		for _, e := range Exporters() {
			files, err := e.Export(p, export.Options{})
			if err != nil {
				f.Fatal(err)
			}
			for _, n := range files.Names() {
				f.Add(uint8(slices.Index(export.Targets, e.Target)), n, string(files[n]), "")
			}
			// A Triton instance with its engine arguments beside it.
			if e.Target == export.Triton && qlmsec.PlanOf(p).Instances[0].Name == "llm-0" {
				f.Add(uint8(0), "plan-llm-0/config.pbtxt", string(files["plan-llm-0/config.pbtxt"]), string(files["plan-llm-0/1/model.json"]))
			}
			if e.Target == export.Triton && qlmsec.PlanOf(p).Instances[0].Role != "" {
				f.Add(uint8(0), "plan-decode-0/config.pbtxt", string(files["plan-decode-0/config.pbtxt"]), string(files["plan-decode-0/1/model.json"]))
			}
		}
	}
	f.Fuzz(func(t *testing.T, target uint8, name, data, engine string) {
		if len(data) > 1<<16 || len(engine) > 1<<16 {
			return
		}
		files := export.Files{name: []byte(data)}
		if engine != "" {
			files[path.Join(path.Dir(name), "1", export.VLLMModelFile)] = []byte(engine)
		}
		_, _ = ReadBack(export.Targets[int(target)%len(export.Targets)], files)
	})
}

// BenchmarkExport exports the bundled plan to all three targets, validation included.
func BenchmarkExport(b *testing.B) {
	p := readPlan(b)
	for b.Loop() {
		for _, e := range Exporters() {
			files, err := e.Export(p, export.Options{})
			if err != nil {
				b.Fatal(err)
			}
			if err := export.Validate(files); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestEngineSettingsExported: the engine arguments are the values the simulator runs
// (dataplane/llm's resolved engine): vLLM V1's defaults by GPU, the older iteration fields
// over them, the profile's engine settings over both, and chunked prefill off capping
// max_model_len at the token budget; swap space only where the engine swaps.
func TestEngineSettingsExported(t *testing.T) {
	off := false
	base := formats.LLMProfile{Model: "m", GPU: "A100", GPUCount: 1, WeightBytes: 14e9, KVBytesPerToken: 131072, KVCapacityTokens: 100000}
	gib := int64(1 << 30)
	for _, tc := range []struct {
		name   string
		gpu    string
		engine *formats.LLMEngine
		want   []string
		iter   *formats.LLMIteration
	}{
		{"iteration fields", "A100", nil, []string{"--max-num-seqs=64", "--max-model-len=3072", "--max-num-batched-tokens=1024", "--block-size=32", "--swap-space=2"},
			&formats.LLMIteration{MaxBatchedTokens: 1024, MaxSeqs: 64, BlockTokens: 32, CPUSwapBytes: 2 * gib}},
		{"iteration evicts", "A100", nil, []string{"--max-num-seqs=256", "--max-model-len=3072", "--max-num-batched-tokens=2048", "--block-size=16"},
			&formats.LLMIteration{PreemptMode: "evict", CPUSwapBytes: 2 * gib}},
		{"engine over iteration", "A100", &formats.LLMEngine{MaxNumBatchedTokens: 4096, SwapSpace: 1},
			[]string{"--max-num-seqs=64", "--max-model-len=3072", "--max-num-batched-tokens=4096", "--block-size=16", "--swap-space=1"},
			&formats.LLMIteration{MaxBatchedTokens: 1024, MaxSeqs: 64, PreemptMode: "evict", CPUSwapBytes: 2 * gib}},
		{"engine swaps the iteration's swap space", "A100", &formats.LLMEngine{PreemptionMode: formats.PreemptionSwap},
			[]string{"--max-num-seqs=256", "--max-model-len=3072", "--max-num-batched-tokens=2048", "--block-size=16", "--swap-space=2"},
			&formats.LLMIteration{PreemptMode: "evict", CPUSwapBytes: 2 * gib}},
		{"engine recomputes", "A100", &formats.LLMEngine{PreemptionMode: formats.PreemptionRecompute, SwapSpace: 4},
			[]string{"--max-num-seqs=256", "--max-model-len=3072", "--max-num-batched-tokens=2048", "--block-size=16"}, nil},
		{"A100 defaults", "A100", nil, []string{"--max-num-seqs=256", "--max-model-len=3072", "--max-num-batched-tokens=2048", "--block-size=16"}, nil},
		{"H100 defaults", "H100", nil, []string{"--max-num-seqs=1024", "--max-model-len=3072", "--max-num-batched-tokens=8192", "--block-size=16"}, nil},
		{"settings", "A100", &formats.LLMEngine{MaxNumBatchedTokens: 512, MaxNumSeqs: 512, BlockSize: 32, MaxModelLen: 8192, MaxNumPartialPrefills: 2, SwapSpace: 4, SchedulingPolicy: "priority"},
			[]string{"--max-num-seqs=512", "--max-model-len=8192", "--max-num-batched-tokens=512", "--block-size=32", "--swap-space=4", "--max-num-partial-prefills=2", "--scheduling-policy=priority"}, nil},
		{"fp8 KV cache", "H100", &formats.LLMEngine{KVCacheDtype: "fp8"},
			[]string{"--max-num-seqs=1024", "--max-model-len=3072", "--max-num-batched-tokens=8192", "--block-size=16", "--kv-cache-dtype=fp8"}, nil},
		{"fp8 weights, expert parallel", "H100", &formats.LLMEngine{Quantization: "fp8", EnableExpertParallel: true},
			[]string{"--max-num-seqs=1024", "--max-model-len=3072", "--max-num-batched-tokens=8192", "--block-size=16", "--quantization=fp8", "--enable-expert-parallel"}, nil},
		{"hybrid KV manager off", "H100", &formats.LLMEngine{DisableHybridKVCacheManager: true},
			[]string{"--max-num-seqs=1024", "--max-model-len=3072", "--max-num-batched-tokens=8192", "--block-size=16", "--disable-hybrid-kv-cache-manager"}, nil},
		{"chunked off", "A100", &formats.LLMEngine{MaxNumBatchedTokens: 1024, EnableChunkedPrefill: &off},
			[]string{"--max-num-seqs=256", "--max-model-len=1024", "--max-num-batched-tokens=1024", "--block-size=16", "--no-enable-chunked-prefill"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := base
			p.GPU, p.Engine, p.Iteration = tc.gpu, tc.engine, tc.iter
			e, err := engine(dllm.NewModel(&p), qlmsec.QLMInstance{Model: "m", GPU: tc.gpu, GPUCount: 1}, 3072, 0)
			if err != nil {
				t.Fatal(err)
			}
			args := instance{engine: e, in: qlmsec.QLMInstance{Model: "m"}}.args()
			got := strings.Join(args[5:], " ")
			if got != strings.Join(tc.want, " ") {
				t.Errorf("args %s\nwant %s", got, strings.Join(tc.want, " "))
			}
			back, err := engineFromArgs(args)
			if err != nil || !reflect.DeepEqual(back, e) {
				t.Errorf("read back %+v (%v), want %+v", back, err, e)
			}
		})
	}
}
