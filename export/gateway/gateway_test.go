package gateway

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"

	"github.com/plan-dev/plan/export"
	"github.com/plan-dev/plan/export/vllm"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
)

// crdDir holds the published CRDs (Apache-2.0, NOTICE beside them).
const crdDir = "../../testdata/schema"

func engine(model string, tp int) vllm.Engine {
	return vllm.Engine{Model: model, TensorParallelSize: tp, GPUMemoryUtilization: 0.9, MaxNumSeqs: 256, MaxModelLen: 4096, MaxNumBatchedTokens: 2048, BlockSize: 16}
}

func class(name, model string, slo, ttft formats.Duration, interactive bool, prefix int) llmspec.LLMClass {
	return llmspec.LLMClass{Name: name, Model: model, SLO: slo, TTFTSLO: ttft, Interactive: interactive, RateRPS: 1,
		InputTokens: llmspec.TokenProfile{Mean: 512, Max: 2048}, OutputTokens: llmspec.TokenProfile{Mean: 128, Max: 512}, PrefixTokens: prefix}
}

// fleets are the cases every test renders: aggregated pools, one with shared prefixes; and a
// disaggregated pool with a tensor-parallel decode instance.
func fleets() map[string]vllm.Fleet {
	kvp, kvc := vllm.KVTransferConfig{KVConnector: "NixlConnector", KVRole: "kv_producer"}, vllm.KVTransferConfig{KVConnector: "NixlConnector", KVRole: "kv_consumer"}
	pre, dec := engine("org/m8b", 1), engine("org/m8b", 2)
	pre.KVTransferConfig, dec.KVTransferConfig = &kvp, &kvc
	off := false
	dec.EnablePrefixCaching = &off
	sec := formats.Duration(1e9)
	return map[string]vllm.Fleet{
		"aggregated": {System: "QLM", Classes: []llmspec.LLMClass{
			class("chat", "m7b", 10*sec, sec/2, true, 256), class("batch", "m7b", 60*sec, 0, false, 0),
			class("code", "m13b", 20*sec, 0, true, 0)},
			Instances: []vllm.Instance{
				{Name: "llm-0", Unit: "p-llm-0", Model: "m7b", GPU: "A100", GPUCount: 1, KVCapacityTokens: 400000, Engine: engine("org/m7b", 1)},
				{Name: "llm-1", Unit: "p-llm-1", Model: "m7b", GPU: "A100", GPUCount: 1, KVCapacityTokens: 300000, Engine: engine("org/m7b", 1)},
				{Name: "llm-2", Unit: "p-llm-2", Model: "m13b", GPU: "H100", GPUCount: 2, KVCapacityTokens: 500000, Engine: engine("org/m13b", 2)}}},
		"disaggregated": {System: "QLM", Classes: []llmspec.LLMClass{class("chat", "m8b", 10*sec, sec, true, 0)},
			Instances: []vllm.Instance{
				{Name: "prefill-0", Unit: "p-prefill-0", Model: "m8b", GPU: "H100", GPUCount: 1, Role: llmspec.RolePrefill, KVCapacityTokens: 200000, Engine: pre},
				{Name: "decode-0", Unit: "p-decode-0", Model: "m8b", GPU: "H100", GPUCount: 2, Role: llmspec.RoleDecode, KVCapacityTokens: 900000, Engine: dec}}},
	}
}

func render(t *testing.T, f vllm.Fleet) export.Files {
	t.Helper()
	files, err := Target.(export.Renderer[vllm.Fleet]).Render(f, export.Options{Name: "p"}.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	reg := export.MustRegistry(Target)
	if err := reg.Validate(files, true); err != nil {
		t.Fatal(err)
	}
	return files
}

// crdSchemas compiles the openAPIV3Schema of every version of the published CRDs, keyed by
// apiVersion/kind, as kubeconform does in strict mode: an object that lists its properties
// takes no others.
func crdSchemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	out := map[string]*jsonschema.Schema{}
	for _, f := range []string{"crd-inferencepools.yaml", "crd-inferenceobjectives.yaml"} {
		raw, err := os.ReadFile(filepath.Join(crdDir, f))
		if err != nil {
			t.Fatal(err)
		}
		var crd struct {
			Spec struct {
				Group    string                `json:"group"`
				Names    struct{ Kind string } `json:"names"`
				Versions []struct {
					Name   string `json:"name"`
					Schema struct {
						OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
					} `json:"schema"`
				} `json:"versions"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(raw, &crd); err != nil {
			t.Fatal(err)
		}
		for _, v := range crd.Spec.Versions {
			doc := strict(v.Schema.OpenAPIV3Schema)
			js, _ := json.Marshal(doc)
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
			if err != nil {
				t.Fatal(err)
			}
			c := jsonschema.NewCompiler()
			url := "crd:///" + f + "/" + v.Name
			if err := c.AddResource(url, inst); err != nil {
				t.Fatal(err)
			}
			s, err := c.Compile(url)
			if err != nil {
				t.Fatalf("%s %s: %v", f, v.Name, err)
			}
			out[crd.Spec.Group+"/"+v.Name+"/"+crd.Spec.Names.Kind] = s
		}
	}
	return out
}

// strict closes every object schema that lists properties (kubeconform -strict).
func strict(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = strict(e)
		}
		if _, ok := x["properties"]; ok {
			if _, set := x["additionalProperties"]; !set {
				x["additionalProperties"] = false
			}
		}
	case []any:
		for i := range x {
			x[i] = strict(x[i])
		}
	}
	return v
}

// TestCRDs validates every InferencePool and InferenceObjective of every case against the
// published CRD schemas (kubeconform-style), and every other file against the registry's
// schemas and rules (render does); a kind with no CRD schema fails.
func TestCRDs(t *testing.T) {
	schemas := crdSchemas(t)
	n := 0
	for name, f := range fleets() {
		for file, data := range render(t, f) {
			var doc map[string]any
			if err := yaml.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}
			kind, _ := doc["kind"].(string)
			if kind != PoolKind && kind != ObjectiveKind {
				continue
			}
			s := schemas[doc["apiVersion"].(string)+"/"+kind]
			if s == nil {
				t.Fatalf("%s: %s: %s %s: no published CRD version", name, file, doc["apiVersion"], kind)
			}
			js, _ := json.Marshal(doc)
			inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(js))
			if err := s.Validate(inst); err != nil {
				t.Errorf("%s: %s: %v", name, file, err)
			}
			n++
		}
	}
	if n != 2+3+1+1 { // pools and objectives of both cases
		t.Errorf("validated %d objects, want 7", n)
	}
	// The check can fail: a priority that is not an integer, an unknown field.
	bad := map[string]any{"apiVersion": ObjectiveAPIVersion, "kind": ObjectiveKind, "metadata": map[string]any{"name": "x"},
		"spec": map[string]any{"poolRef": map[string]any{"name": "p"}, "priority": 1.5, "criticality": "high"}}
	js, _ := json.Marshal(bad)
	inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err := schemas[ObjectiveAPIVersion+"/"+ObjectiveKind].Validate(inst); err == nil || !strings.Contains(err.Error(), "criticality") {
		t.Errorf("a bad objective passes the CRD: %v", err)
	}
}

// TestEndpointPicker: queue scoring everywhere; the prefix scorer only where a class shares a
// prefix and the engines cache it; the disaggregated pool's profiles, filters and decider.
func TestEndpointPicker(t *testing.T) {
	cases := []struct {
		fleet, pool string
		want, not   []string
	}{
		{"aggregated", "p-m7b", []string{PrefixProducer, PrefixScorer, QueueScorer, KVUtilScorer, SingleProfileHandler, "lruCapacityPerServer: 18750", "maxPrefixTokensToMatch: 2048"}, []string{DisaggProfileHandler}},
		{"aggregated", "p-m13b", []string{QueueScorer, KVUtilScorer, SingleProfileHandler}, []string{PrefixScorer, PrefixProducer}},
		{"disaggregated", "p-m8b", []string{DisaggProfileHandler, PrefillFilter, DecodeFilter, PDDecider, QueueScorer, "nonCachedTokens: 1", "name: prefill", "name: decode", "lruCapacityPerServer: 12500"}, []string{PrefixScorer, SingleProfileHandler}},
	}
	for _, c := range cases {
		cfg := string(render(t, fleets()[c.fleet])["epp/"+c.pool+".yaml"])
		for _, w := range c.want {
			if !strings.Contains(cfg, w) {
				t.Errorf("%s: epp/%s.yaml lacks %q:\n%s", c.fleet, c.pool, w, cfg)
			}
		}
		for _, w := range c.not {
			if strings.Contains(cfg, w) {
				t.Errorf("%s: epp/%s.yaml has %q", c.fleet, c.pool, w)
			}
		}
	}
	// Prefix caching off on the pool's engines: no prefix scoring although a class shares one.
	f := fleets()["aggregated"]
	off := false
	f.Instances[1].Engine.EnablePrefixCaching = &off
	if cfg := string(render(t, f)["epp/p-m7b.yaml"]); strings.Contains(cfg, PrefixScorer) {
		t.Errorf("prefix scoring with an engine that does not cache prefixes:\n%s", cfg)
	}
}

// TestPriority: interactive classes first, then the tighter SLO (TTFT where set), equal
// urgency equal.
func TestPriority(t *testing.T) {
	sec := formats.Duration(1e9)
	cs := []llmspec.LLMClass{
		class("batch-loose", "m", 120*sec, 0, false, 0), class("batch-tight", "m", 30*sec, 0, false, 0),
		class("chat", "m", 60*sec, sec, true, 0), class("chat-fast", "m", 60*sec, sec/4, true, 0),
		class("chat-twin", "m", 90*sec, sec, true, 0), class("no-slo", "m", 0, 0, false, 0),
	}
	want := map[string]int{"no-slo": 0, "batch-loose": 1, "batch-tight": 2, "chat": 3, "chat-twin": 3, "chat-fast": 4}
	for _, c := range cs {
		if got := Priority(c, cs); got != want[c.Name] {
			t.Errorf("%s: priority %d, want %d", c.Name, got, want[c.Name])
		}
	}
}

// TestReadBack: every case reads back into its fleet (without the KV capacities, which only
// size the picker's index; served names are the pool's).
func TestReadBack(t *testing.T) {
	for name, f := range fleets() {
		got, err := ReadBack(render(t, f))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := map[string]vllm.Instance{}
		for _, in := range f.Instances {
			in.KVCapacityTokens, in.Served = 0, nil
			if in.Version.Minor == 0 {
				in.Version = (*formats.LLMEngine)(nil).Version() // rendered as the default release's image
			}
			want[in.Name] = in
		}
		gotBy := map[string]vllm.Instance{}
		for _, in := range got.Instances {
			gotBy[in.Name] = in
		}
		if !reflect.DeepEqual(gotBy, want) {
			t.Errorf("%s: read back %+v\nwant %+v", name, gotBy, want)
		}
		for _, c := range f.Classes {
			if o := got.Objectives[c.Name]; o.Pool != got.Pools[c.Model] || o.Priority != Priority(c, classesOf(f, c.Model)) {
				t.Errorf("%s: class %s: objective %+v", name, c.Name, o)
			}
		}
	}
}

func classesOf(f vllm.Fleet, model string) []llmspec.LLMClass {
	var out []llmspec.LLMClass
	for _, c := range f.Classes {
		if c.Model == model {
			out = append(out, c)
		}
	}
	return out
}

// TestReadBackRejects: files edited so that they disagree with each other, or with the
// plan's engine, fail the rules (and so `plan export --check`) naming file and field.
func TestReadBackRejects(t *testing.T) {
	cases := []struct {
		fleet, file, old, new, want string
		n                           int // occurrences replaced (-1: all)
	}{
		{"aggregated", "inferenceobjective-p-chat.yaml", "name: p-m7b", "name: p-gone", `spec.poolRef.name: "p-gone": no InferencePool`, -1},
		{"aggregated", "inferencepool-p-m13b.yaml", "plan.dev/pool: p-m13b", "plan.dev/pool: p-m7b", "spec.selector.matchLabels", -1},
		{"aggregated", "vllm-p-llm-2.yaml", "--tensor-parallel-size=2", "--tensor-parallel-size=1", "tensor-parallel-size 1", -1},
		{"aggregated", "vllm-p-llm-1.yaml", "- batch\n", "", "pool p-m7b's other instances serve", -1},
		{"aggregated", "vllm-p-llm-0.yaml", "--max-num-seqs=256", "--max-num-seqs=lots", `argument "--max-num-seqs=lots": not a number`, -1},
		{"aggregated", "epp/p-m7b.yaml", "pluginRef: queue-scorer", "pluginRef: queue-scorer-x", `pluginRef: "queue-scorer-x": no such plugin`, -1},
		{"disaggregated", "vllm-p-decode-0.yaml", "llm-d.ai/role: decode", "llm-d.ai/role: prefill", "the routing sidecar", -1},
		{"disaggregated", "vllm-p-decode-0.yaml", "llm-d.ai/role: decode", "llm-d.ai/role: prefill", "metadata.labels", 1},
		{"disaggregated", "vllm-p-prefill-0.yaml", `"kv_role":"kv_producer"`, `"kv_role":"kv_consumer"`, "a prefill instance's engine is the KV producer", -1},
		{"disaggregated", "epp/p-m8b.yaml", "nonCachedTokens: 1", "nonCachedTokens: one", "parameters", -1},
	}
	for _, c := range cases {
		files := render(t, fleets()[c.fleet])
		b := string(files[c.file])
		if !strings.Contains(b, c.old) {
			t.Fatalf("%s: %s has no %q", c.fleet, c.file, c.old)
		}
		files[c.file] = []byte(strings.Replace(b, c.old, c.new, c.n))
		_, err := ReadBack(files)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %s: %q → %q: %v, want %q", c.fleet, c.file, c.old, c.new, err, c.want)
		}
		if err := export.MustRegistry(Target).Validate(files, true); err == nil {
			t.Errorf("%s: %s edited passes the registry's validation", c.fleet, c.file)
		}
	}
}

// TestRenderRefuses: a class of a model no instance serves has no pool to go to.
func TestRenderRefuses(t *testing.T) {
	f := fleets()["aggregated"]
	f.Classes = append(f.Classes, class("lost", "m70b", 1e9, 0, false, 0))
	_, err := Target.(export.Renderer[vllm.Fleet]).Render(f, export.Options{Name: "p"}.Defaults())
	if err == nil || !strings.Contains(err.Error(), `llm_classes[3].model: "m70b"`) {
		t.Errorf("render: %v", err)
	}
}

// FuzzReadBack: any content of any one file of an export reads back or fails with an error,
// never a panic (`plan export --check` reads what the user edited).
func FuzzReadBack(f *testing.F) {
	base := map[string]export.Files{}
	reg := export.MustRegistry(Target)
	for name, fl := range fleets() {
		files, err := Target.(export.Renderer[vllm.Fleet]).Render(fl, export.Options{Name: "p"}.Defaults())
		if err != nil {
			f.Fatal(err)
		}
		base[name] = files
		for _, n := range files.Names() {
			f.Add(name == "disaggregated", n, string(files[n]))
		}
	}
	f.Fuzz(func(t *testing.T, disagg bool, name, data string) {
		files := export.Files{}
		src := base["aggregated"]
		if disagg {
			src = base["disaggregated"]
		}
		for k, v := range src {
			files[k] = v
		}
		files[name] = []byte(data)
		_, _ = ReadBack(files)
		_ = reg.Validate(files, true)
	})
}
