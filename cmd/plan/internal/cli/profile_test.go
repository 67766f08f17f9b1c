package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	runprofile "github.com/plan-dev/plan/internal/run/profile"
	"github.com/plan-dev/plan/profiler/graph"
	"github.com/plan-dev/plan/profiler/llm"
	"github.com/plan-dev/plan/profiler/measure"
	"github.com/plan-dev/plan/profiler/onnx"
)

func readProfile(t *testing.T, path string) *formats.Profile {
	t.Helper()
	p, err := formats.ReadInto[*formats.Profile](path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestProfileZooRoofline(t *testing.T) {
	out := filepath.Join(t.TempDir(), "p.json")
	code, stdout, stderr := rootRun(t, "profile", "--zoo", "resnet50", "--gpu", "L4,P4,V100", "--batch", "1-2", "--vgpu", "1,2", "-o", out)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "resnet50") || !strings.Contains(stderr, "wrote") {
		t.Errorf("stdout %q stderr %q", stdout, stderr)
	}
	p := readProfile(t, out)
	m := &p.Models[0]
	if m.Backend != "roofline" || len(m.Blocks) != 10 || len(m.CutBytes) != 9 || m.Partition.Method != "min-traffic" {
		t.Fatalf("model %s backend %s blocks %d", m.Name, m.Backend, len(m.Blocks))
	}
	// P4 runs whole only: 2 batches; L4 and V100: 2 levels × 2 batches.
	if got := len(m.Latency); got != 4+2+4 {
		t.Errorf("%d latency entries, want 10", got)
	}
	if _, ok := m.Lookup("P4", 2, 1); ok {
		t.Error("P4 vGPU 2 entry present")
	}
	// Same inputs → byte-identical output.
	out2 := filepath.Join(t.TempDir(), "p2.json")
	rootRun(t, "profile", "--zoo", "resnet50", "--gpu", "L4,P4,V100", "--batch", "1-2", "--vgpu", "1,2", "-o", out2, "-q")
	a, _ := os.ReadFile(out)
	b, _ := os.ReadFile(out2)
	if string(a) != string(b) {
		t.Error("two identical runs wrote different files")
	}
}

func TestProfileDemoRooflineAndJSON(t *testing.T) {
	out := filepath.Join(t.TempDir(), "demo.json")
	code, stdout, stderr := rootRun(t, "profile", "--backend", "roofline", "-o", out, "--output", "json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sum struct {
		File   string                `json:"file"`
		Blocks []runprofile.BlockRow `json:"blocks"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("json summary: %v\n%s", err, stdout)
	}
	// L4: 8 + 4 + 2 + 2 grid points; P4: 8.
	if sum.File != out || len(sum.Blocks) != 24 {
		t.Fatalf("summary: file %q, %d rows", sum.File, len(sum.Blocks))
	}
	p := readProfile(t, out)
	if len(p.Models) != 1 || p.Models[0].Name != "demo" {
		t.Fatalf("models: %+v", p.Models)
	}
}

func TestProfileToStdout(t *testing.T) {
	code, stdout, stderr := rootRun(t, "profile", "--zoo", "resnet50", "--gpu", "T4", "--batch", "1", "-o", "-")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	doc, err := formats.Decode("stdout", []byte(stdout), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	if p := doc.(*formats.Profile); len(p.Models) != 1 || p.Models[0].Latency[0].GPU != "T4" {
		t.Fatalf("profile %+v", p)
	}
}

func TestProfileBadInput(t *testing.T) {
	dir := t.TempDir()
	notONNX := filepath.Join(dir, "model.onnx")
	os.WriteFile(notONNX, []byte("this is not a protobuf"), 0o644)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown zoo", []string{"--zoo", "resnet9000"}, "known models: apcnet-r101-d8"},
		{"bad batch", []string{"--zoo", "resnet50", "--batch", "8-1"}, "--batch"},
		{"zero batch", []string{"--zoo", "resnet50", "--batch", "0"}, "--batch"},
		{"bad vgpu", []string{"--zoo", "resnet50", "--vgpu", "1-5"}, "--vgpu"},
		{"unknown gpu", []string{"--zoo", "resnet50", "--gpu", "L4,K80"}, "known GPUs"},
		{"bad backend", []string{"--backend", "tflite"}, "--backend"},
		{"bad partition", []string{"--zoo", "resnet50", "--partition", "random"}, "--partition"},
		{"bad blocks", []string{"--zoo", "resnet50", "--blocks", "0"}, "--blocks"},
		{"model and zoo", []string{notONNX, "--zoo", "resnet50"}, "not both"},
		{"trt without files", []string{"--backend", "trt", "--gpu", "L4"}, "--trt-profile"},
		{"trt two gpus", []string{"--backend", "trt", "--trt-profile", "x.json", "--gpu", "L4,P4"}, "one GPU"},
		{"bad input shape", []string{notONNX, "--input-shape", "3,x"}, "--input-shape"},
		{"not onnx", []string{notONNX, "--backend", "roofline"}, "model.onnx"},
		{"unknown llm", []string{"--llm", "gpt-9"}, "known LLMs"},
		{"bad device", []string{"--zoo", "resnet50", "--backend", "onnx", "--device", "tpu"}, "--device"},
		{"trt on cpu", []string{"--zoo", "resnet50", "--backend", "onnx", "--trt"}, "--trt"},
		{"bad precision", []string{"--zoo", "resnet50", "--precision", "int4"}, "--precision"},
		{"llm zoo and llm", []string{"--zoo", "mistral-7b", "--llm", "all"}, "drop --llm"},
		{"unknown llm in list", []string{"--llm", "llama-3.1-8b,gpt-9"}, "known LLMs"},
		{"empty llm in list", []string{"--llm", "llama-3.1-8b,,qwen2.5-7b"}, "empty model name"},
		{"bad tp", []string{"--llm", "llama-3.1-8b", "--tp", "1,16"}, "--tp"},
		{"bad link", []string{"--llm", "llama-3.1-8b", "--link", "infiniband"}, "--link"},
		{"tp without llm", []string{"--zoo", "resnet50", "--tp", "2"}, "only with --llm"},
		{"explain without llm", []string{"--zoo", "resnet50", "--explain"}, "only with --llm"},
		{"tp fits nothing", []string{"--llm", "llama-3.1-70b", "--gpu", "L4", "--tp", "1"}, "KV tokens"},
		{"nvlink on l4", []string{"--llm", "llama-3.1-8b", "--gpu", "L4", "--tp", "2", "--link", "nvlink"}, "nvlink"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.name+".json")
			code, _, stderr := rootRun(t, append(append([]string{"profile"}, tc.args...), "-o", out)...)
			if code != ExitUsage {
				t.Fatalf("exit %d, want %d; stderr %s", code, ExitUsage, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q lacks %q", stderr, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("wrote an output file on bad input")
			}
		})
	}
}

func TestProfileTRTAndLLM(t *testing.T) {
	out := filepath.Join(t.TempDir(), "trt.json")
	td := filepath.Join("..", "..", "..", "..", "profiler", "trt", "testdata")
	code, stdout, stderr := rootRun(t, "profile", "--backend", "trt", "--trt-profile", filepath.Join(td, "profile.json"),
		"--trt-layers", filepath.Join(td, "layers.json"), "--gpu", "L4", "--blocks", "3", "--llm", "mistral-7b", "-o", out)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	p := readProfile(t, out)
	if len(p.Models) != 1 || p.Models[0].Backend != "trt" || len(p.Models[0].Blocks) != 3 {
		t.Fatalf("models %+v", p.Models)
	}
	if len(p.LLMs) != 1 || p.LLMs[0].GPU != "L4" {
		t.Fatalf("llms %+v", p.LLMs)
	}
	if !strings.Contains(stdout, "mistral-7b") {
		t.Errorf("summary lacks the LLM: %s", stdout)
	}
	// An LLM named with --zoo, like a DNN.
	zooLLM := filepath.Join(t.TempDir(), "zoo-llm.json")
	if code, _, stderr := rootRun(t, "profile", "--zoo", "llama-2-70b", "--backend", "roofline", "--gpu", "A100", "-o", zooLLM); code != ExitOK {
		t.Fatalf("--zoo llama-2-70b: exit %d: %s", code, stderr)
	}
	// Two A100s hold its 138 GB with room for 41k KV tokens (vLLM's budget).
	if p := readProfile(t, zooLLM); len(p.Models) != 0 || len(p.LLMs) != 1 || p.LLMs[0].GPUCount != 2 {
		t.Fatalf("--zoo llama-2-70b: %+v", p)
	}
	// LLMs only, then import them back.
	llmOut := filepath.Join(t.TempDir(), "llm.json")
	code, _, stderr = rootRun(t, "profile", "--llm", "all", "-o", llmOut)
	if code != ExitOK {
		t.Fatalf("llm all: exit %d: %s", code, stderr)
	}
	// Every catalogue model on each default GPU, but those eight of them cannot hold
	// (named on stderr: Llama-4-Maverick's 400B on A10s, ...).
	n, skipped := len(readProfile(t, llmOut).LLMs), strings.Count(stderr, "does not fit 8")
	if want := 3 * len(llm.Names()); n+skipped != want || skipped > want/4 {
		t.Fatalf("%d LLM profiles and %d skipped, want %d models × 3 GPUs: %s", n, skipped, len(llm.Names()), stderr)
	}
	again := filepath.Join(t.TempDir(), "again.json")
	if code, _, stderr := rootRun(t, "profile", "--llm", llmOut, "-o", again); code != ExitOK {
		t.Fatalf("llm import: exit %d: %s", code, stderr)
	}
	if l := readProfile(t, again).LLMs; len(l) != n || l[0].Backend != "import" {
		t.Fatalf("imported %+v", l)
	}
}

// tinyCNN is a small graph with a skip connection and a depthwise block.
func tinyCNN(t *testing.T) *graph.Graph {
	f := func(name string, s ...int64) graph.Tensor {
		return graph.Tensor{Name: name, Shape: s, DType: "float32"}
	}
	conv := func(name, in, out string, k, group int64) graph.Node {
		return graph.Node{Name: name, Op: "Conv", Inputs: []string{in}, Outputs: []string{out}, Attrs: map[string][]int64{
			"kernel_shape": {k, k}, "strides": {1, 1}, "pads": {k / 2, k / 2, k / 2, k / 2}, "dilations": {1, 1}, "group": {group}}}
	}
	g := &graph.Graph{
		Name:    "tiny",
		Tensors: map[string]graph.Tensor{"x": f("x", 3, 32, 32), "a": f("a", 8, 32, 32), "b": f("b", 8, 32, 32), "c": f("c", 8, 32, 32), "d": f("d", 8, 32, 32), "y": f("y", 8, 32, 32)},
		Inputs:  []string{"x"}, Outputs: []string{"y"},
		Nodes: []graph.Node{
			conv("conv1", "x", "a", 3, 1),
			{Name: "relu", Op: "Relu", Inputs: []string{"a"}, Outputs: []string{"b"}},
			conv("dw", "b", "c", 3, 8),
			conv("pw", "c", "d", 1, 1),
			{Name: "add", Op: "Add", Inputs: []string{"a", "d"}, Outputs: []string{"y"}},
		},
	}
	if err := graph.Annotate(g); err != nil {
		t.Fatal(err)
	}
	return g
}

func TestProfileONNX(t *testing.T) {
	data, err := onnx.Build(tinyCNN(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	model := filepath.Join(dir, "tiny.onnx")
	if err := os.WriteFile(model, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// The roofline backend reads any ONNX file.
	rf := filepath.Join(dir, "roof.json")
	if code, _, stderr := rootRun(t, "profile", model, "--backend", "roofline", "--gpu", "T4", "--blocks", "2", "-o", rf); code != ExitOK {
		t.Fatalf("roofline of ONNX: exit %d: %s", code, stderr)
	}
	if m := readProfile(t, rf).Models[0]; m.Name != "tiny" || len(m.Layers) == 0 {
		t.Fatalf("roofline of ONNX: %+v", m)
	}
	out := filepath.Join(dir, "cpu.json")
	code, _, stderr := rootRun(t, "profile", model, "--batch", "1,2", "--blocks", "2", "-o", out)
	if err := measure.Available(); err != nil {
		// Without the library the command must say how to get it, as a usage error.
		if code != ExitUsage || !strings.Contains(stderr, "make assets") {
			t.Fatalf("no ONNX Runtime: exit %d, stderr %q", code, stderr)
		}
		return
	}
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	m := readProfile(t, out).Models[0]
	if m.Backend != "onnx" || m.Device != "cpu" || len(m.Blocks) != 2 || len(m.Latency) != 2 {
		t.Fatalf("measured: %+v", m)
	}
	for _, e := range m.Latency {
		if e.GPU != "cpu" || len(e.BlockUs) != 2 || e.BlockUs[0] <= 0 {
			t.Errorf("entry %+v", e)
		}
	}
}
