package cli

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProfileLLMConfig: --llm-config profiles models a user brings as Hugging Face
// config.json files (a directory of them, or one file beside --llm names), each named by
// its directory and carrying its engine id; a config of a catalogue model (same name, same
// shapes) is the catalogue's, whose id the exports know; a mixture-of-experts config
// profiles with its experts.
func TestProfileLLMConfig(t *testing.T) {
	repoRoot(t)
	out := filepath.Join(t.TempDir(), "p.json")
	code, _, stderr := rootRun(t, "profile", "--llm-config", "profiler/llm/testdata/configs", "--llm-config", "profiler/llm/testdata/configs-moe", "--llm", "llama-3.1-8b", "--gpu", "H100", "--tp", "1,2", "-o", out)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := map[string]string{}
	for _, l := range readProfile(t, out).LLMs {
		got[l.Model] = l.HFModel
	}
	for m, id := range map[string]string{"llama-3.2-3b": "", "qwen3-14b": "", "llama-3.1-8b": "", "mixtral-8x7b": ""} {
		if h, ok := got[m]; !ok || h != id {
			t.Errorf("%s: hf_model %q (present %v), want %q", m, h, ok, id)
		}
	}
}

// TestProfileLLMConfigBadInput: what the dense step model cannot describe is refused naming
// the file, field and value, writing nothing.
func TestProfileLLMConfigBadInput(t *testing.T) {
	runBadInput(t, []badInputCase{
		{name: "experts per token past the experts", args: []string{"profile", "--llm-config", "profiler/llm/testdata/configs-bad/moe-topk.json", "--gpu", "H100", "-o", "$TMP/p.json"},
			code: ExitUsage, out: "p.json", want: []string{"profiler/llm/testdata/configs-bad/moe-topk.json: num_experts_per_tok: 10: more experts per token than the 8 experts"}},
		{name: "fp4 before blackwell", args: []string{"profile", "--llm", "mixtral-8x7b", "--quantization", "nvfp4", "--gpu", "H100", "--tp", "2", "-o", "$TMP/p.json"},
			code: ExitUsage, out: "p.json", want: []string{"quantization nvfp4: needs a Blackwell GPU"}},
		{name: "ep not dividing experts", args: []string{"profile", "--llm", "mixtral-8x7b", "--expert-parallel", "--gpu", "H100", "--tp", "3", "-o", "$TMP/p.json"},
			code: ExitUsage, out: "p.json", want: []string{"tensor parallel size 3"}},
		{name: "unknown quantization", args: []string{"profile", "--llm", "mixtral-8x7b", "--quantization", "int3", "--gpu", "H100", "-o", "$TMP/p.json"},
			code: ExitUsage, out: "p.json", want: []string{`--quantization: "int3": must be one of auto, bf16, fp8, mxfp4, nvfp4`}},
		{name: "ep without tp", args: []string{"profile", "--llm", "mixtral-8x7b", "--expert-parallel", "--gpu", "H100", "-o", "$TMP/p.json"},
			code: ExitUsage, out: "p.json", want: []string{"--expert-parallel: needs --tp"}},
		{name: "missing config", args: []string{"profile", "--llm-config", "$TMP/none.json", "--gpu", "H100", "-o", "$TMP/p.json"},
			code: ExitUsage, out: "p.json", want: []string{"--llm-config:", "none.json"}},
		{name: "with import", args: []string{"profile", "--llm-config", "profiler/llm/testdata/configs", "--import", "profiler/llm/testdata/steps.csv", "--llm", "mistral-7b", "-o", "$TMP/p.json"},
			code: ExitUsage, out: "p.json", want: []string{"--llm-config profiler/llm/testdata/configs: profiles a model from its shapes: not with --import"}},
	})
}

// TestProfileLLMConfigCatalogueName: a config is profiled as the user's model whatever its
// directory is called. Named like a catalogue model (as public config collections name
// them), it keeps the name only when it is that model (same shapes, the same Hugging Face id
// or none, said in a note), and
// the model flags (--tp, --explain, --quantization, --expert-parallel) apply to it; with other
// shapes or another id it is profiled under NAME-config, its own id kept, and a note says so;
// without a Hugging Face id hf_model is left empty (never a local path) and a note says so.
func TestProfileLLMConfigCatalogueName(t *testing.T) {
	repoRoot(t)
	catalogue := func(name string) map[string]any {
		var m map[string]any
		b, err := os.ReadFile(filepath.Join("profiler", "llm", "catalogue", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	with := func(m map[string]any, kv ...any) map[string]any {
		out := maps.Clone(m)
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(out, kv[i].(string))
			} else {
				out[kv[i].(string)] = kv[i+1]
			}
		}
		return out
	}
	yi, moe := catalogue("yi-34b"), catalogue("qwen3-30b-a3b")
	for _, tc := range []struct {
		name   string
		dir    string
		config map[string]any
		flags  []string
		// want is the model written and its hf_model; note a substring stderr must hold.
		model, hf, note string
		tp              int
	}{
		{name: "catalogue copy with --tp", dir: "yi-34b", config: yi, flags: []string{"--tp", "2"}, model: "yi-34b", hf: "", tp: 2},
		{name: "catalogue copy with --explain", dir: "Yi-34B", config: yi, flags: []string{"--tp", "2", "--explain"}, model: "yi-34b", hf: "", tp: 2},
		{name: "catalogue copy with --quantization", dir: "yi-34b", config: yi, flags: []string{"--quantization", "fp8"}, model: "yi-34b", hf: "", tp: 1},
		{name: "moe copy with --expert-parallel", dir: "qwen3-30b-a3b", config: moe, flags: []string{"--tp", "2", "--expert-parallel"}, model: "qwen3-30b-a3b", hf: "", tp: 2},
		{name: "other shapes", dir: "yi-34b", config: with(yi, "num_hidden_layers", 30, "_name_or_path", "me/yi-34b-pruned"), flags: []string{"--tp", "2"},
			model: "yi-34b-config", hf: "me/yi-34b-pruned", tp: 2, note: `profiled as model "yi-34b-config": "yi-34b" is the catalogue's model (profiler/llm/catalogue/yi-34b.json), whose shapes differ`},
		{name: "same shapes, another id", dir: "yi-34b", config: with(yi, "_name_or_path", "me/yi-34b-ft"),
			model: "yi-34b-config", hf: "me/yi-34b-ft", tp: 1, note: "whose Hugging Face id 01-ai/Yi-34B-Chat the config does not give"},
		{name: "same shapes, no id", dir: "yi-34b", config: with(yi, "_name_or_path", nil),
			model: "yi-34b", hf: "", tp: 1, note: "profiled as the catalogue's yi-34b, which the exports load as 01-ai/Yi-34B-Chat"},
		{name: "own model, no id", dir: "my-model", config: with(yi, "_name_or_path", nil),
			model: "my-model", hf: "", tp: 1, note: "my-model: no Hugging Face id"},
		{name: "own model, local path id", dir: "my-model", config: with(yi, "_name_or_path", "/home/me/ckpt"),
			model: "my-model", hf: "", tp: 1, note: "set hf_model in the profile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			b, _ := json.Marshal(tc.config)
			if err := os.MkdirAll(filepath.Join(tmp, "cfg", tc.dir), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(tmp, "cfg", tc.dir, "config.json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(tmp, "p.json")
			args := append([]string{"profile", "--llm-config", filepath.Join(tmp, "cfg"), "--gpu", "H100", "-o", out}, tc.flags...)
			code, _, stderr := rootRun(t, args...)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			ls := readProfile(t, out).LLMs
			if len(ls) != 1 || ls[0].Model != tc.model || ls[0].HFModel != tc.hf || ls[0].GPUCount != tc.tp {
				t.Fatalf("profiled %+v, want one %s (hf_model %q) on %d GPUs", ls, tc.model, tc.hf, tc.tp)
			}
			if !strings.Contains(stderr, tc.note) {
				t.Errorf("stderr %q, want %q", stderr, tc.note)
			}
		})
	}
}

// TestProfileLLMHFID: --llm takes the Hugging Face id a server was started with. A catalogue
// model's own id is that model; an id of a catalogue model's shapes under another name (the
// base model of an instruct one, a quantized re-publication the catalogue lists) profiles as
// the model the id names — named by its repository, hf_model the id, the checkpoint's own
// quantization kept — with a note saying whose shapes it has; an id of no catalogue shapes
// is refused naming it, writing nothing.
func TestProfileLLMHFID(t *testing.T) {
	repoRoot(t)
	out := filepath.Join(t.TempDir(), "p.json")
	code, _, stderr := rootRun(t, "profile", "--llm", "meta-llama/Llama-3.1-8B-Instruct,mistralai/Mixtral-8x7B-v0.1,RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic", "--gpu", "H100", "--tp", "2", "-o", out)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	type got struct{ hf, weights string }
	want := map[string]got{
		"llama-3.1-8b":      {"", ""},
		"mixtral-8x7b-v0.1": {"mistralai/Mixtral-8x7B-v0.1", ""},
		"llama-4-scout-17b-16e-instruct-fp8-dynamic": {"RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic", "fp8"},
	}
	seen := map[string]got{}
	for _, l := range readProfile(t, out).LLMs {
		seen[l.Model] = got{l.HFModel, l.WeightDType}
	}
	if !maps.Equal(seen, want) {
		t.Errorf("profiles %v, want %v", seen, want)
	}
	for _, w := range []string{`--llm mistralai/Mixtral-8x7B-v0.1: the shapes of the catalogue's mixtral-8x7b`, `profiled as model "llama-4-scout-17b-16e-instruct-fp8-dynamic"`} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	// The checkpoint is the one the validation set ran: its band is not widened as an
	// unvalidated mixture-of-experts model.
	if strings.Contains(stderr, "llama-4-scout-17b-16e-instruct-fp8-dynamic is a mixture-of-experts model the validation set does not hold") {
		t.Errorf("the validated checkpoint is called unvalidated:\n%s", stderr)
	}
	runBadInput(t, []badInputCase{
		{name: "unknown id", args: []string{"profile", "--llm", "acme/Foo-7B", "--gpu", "H100", "-o", "$TMP/p.json"},
			code: ExitUsage, out: "p.json", want: []string{`--llm: LLM "acme/Foo-7B": no catalogue model has this Hugging Face id`}},
	})
}
