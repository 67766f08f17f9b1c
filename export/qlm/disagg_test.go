package qlm

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/export"
	"github.com/plan-dev/plan/export/exporttest"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
)

// disaggPlanFile is the bundled disaggregated plan: m8b on one prefill and one decode H100
// instance, KV over a 50 GB/s link.
const (
	disaggPlanFile  = "../../testdata/disagg/plan.json"
	disaggGoldenDir = "../../testdata/export/qlm-disagg"
)

// TestGoldenDisagg compares every target's export of the disaggregated plan with
// testdata/export/qlm-disagg/<target>/ after the schema check, then reads it back: the
// instances keep their roles, KServe and Ray have one unit per role, and every engine is
// its role's KV producer or consumer.
func TestGoldenDisagg(t *testing.T) {
	p := exporttest.ReadPlan(t, disaggPlanFile)
	units := map[string][]string{
		export.Triton: {"disagg-prefill-0", "disagg-decode-0"},
		export.KServe: {"disagg-prefill", "disagg-decode"},
		export.Ray:    {"disagg-prefill", "disagg-decode"},
	}
	for _, target := range export.Targets {
		t.Run(target, func(t *testing.T) {
			files, got := goldenExport(t, p, target, "disagg", disaggGoldenDir)
			check(t, got, p, map[string][]int{"prefill-0": {0}, "decode-0": {1}})
			want := map[string]string{"prefill-0": "kv_producer", "decode-0": "kv_consumer"}
			for name, role := range want {
				e := got.Engines[name]
				if e.KVTransferConfig == nil || *e.KVTransferConfig != (KVTransferConfig{KVConnector: KVConnector, KVRole: role}) {
					t.Errorf("%s: kv_transfer_config %+v, want %s over %s", name, e.KVTransferConfig, role, KVConnector)
				}
				if e.TensorParallelSize != 1 || e.MaxNumBatchedTokens != 2048 || e.MaxNumSeqs != 1024 {
					t.Errorf("%s: engine %+v: want tensor_parallel_size 1, max_num_batched_tokens 2048 (the profile's), max_num_seqs 1024 (vLLM's H100 default)", name, e)
				}
			}
			for _, u := range units[target] {
				if !strings.Contains(strings.Join(files.Names(), "\n"), u) && !strings.Contains(string(files[export.RayConfigFile]), "name: "+u+"\n") {
					t.Errorf("no unit %s in %v", u, files.Names())
				}
			}
		})
	}
}

// rolePlan is the disaggregated plan with prefill instances on GPUs 0 and 2 and a decode
// instance on GPU 1 of three H100s.
func rolePlan(t testing.TB) *formats.Plan {
	t.Helper()
	p := exporttest.ReadPlan(t, disaggPlanFile)
	c := *p.Provenance.Embedded.Cluster
	c.GPUs = []formats.GPUPool{{Type: "H100", Count: 3, PerServer: 4, MemoryBytes: 80e9}}
	p.Provenance.Embedded.Cluster = &c
	pre := qlmsec.PlanOf(p).Instances[0]
	pre2 := pre
	pre2.Name, pre2.Queue = "prefill-1", nil
	qlmsec.PlanOf(p).Instances = append(qlmsec.PlanOf(p).Instances, pre2)
	return p
}

// TestRoleReplicas: KServe and Ray run a role's instances as replicas of one unit, and read
// back to the plan's instances in plan order with their GPUs.
func TestRoleReplicas(t *testing.T) {
	p := rolePlan(t)
	for _, tc := range []struct {
		target, file, replicas string
	}{
		{export.KServe, "inferenceservice-plan-prefill.yaml", "maxReplicas: 2\n    minReplicas: 2"},
		{export.Ray, export.RayConfigFile, "max_replicas: 2\n      min_replicas: 2"},
		{export.Triton, "plan-prefill-1/config.pbtxt", `key: "qlm.role"`},
	} {
		t.Run(tc.target, func(t *testing.T) {
			files, err := exporter(t, tc.target).Export(p, export.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := export.Validate(files); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(files[tc.file]), tc.replicas) {
				t.Errorf("%s has no %q:\n%s", tc.file, tc.replicas, files[tc.file])
			}
			got, err := ReadBack(tc.target, files)
			if err != nil {
				t.Fatal(err)
			}
			check(t, got, p, map[string][]int{"prefill-0": {0}, "decode-0": {1}, "prefill-1": {2}})
		})
	}
}

// TestEngineFlags: the engine flags each role needs, on KServe's container args and read
// back: prefix caching where the profile enables it (not on decode instances), speculative
// decoding where it is on (not on prefill instances; n-gram lookup when drafting is free,
// the named draft model otherwise), the KV role of role instances.
func TestEngineFlags(t *testing.T) {
	base := formats.LLMProfile{Model: "m", GPU: "A100", GPUCount: 1, WeightBytes: 14e9, KVBytesPerToken: 131072, KVCapacityTokens: 100000}
	free := &formats.LLMSpeculative{DraftTokens: 4, AcceptanceRate: 0.8}
	draft := &formats.LLMSpeculative{DraftTokens: 3, AcceptanceRate: 0.7, DraftCostRatio: 0.1, DraftModel: "meta-llama/Llama-3.2-1B-Instruct"}
	for _, tc := range []struct {
		name   string
		role   string
		engine *formats.LLMEngine
		want   []string
	}{
		{"aggregated", "", nil, nil},
		{"prefix caching", "", &formats.LLMEngine{EnablePrefixCaching: new(true)}, []string{"--enable-prefix-caching"}},
		// Off where the profile says so: vLLM V1 caches unless told not to.
		{"prefix caching off", "", &formats.LLMEngine{EnablePrefixCaching: new(false)}, []string{"--no-enable-prefix-caching"}},
		{"ngram", "", &formats.LLMEngine{Speculative: free}, []string{`--speculative-config={"method":"ngram","num_speculative_tokens":4}`}},
		{"draft model", "", &formats.LLMEngine{Speculative: draft},
			[]string{`--speculative-config={"method":"draft_model","model":"meta-llama/Llama-3.2-1B-Instruct","num_speculative_tokens":3}`}},
		{"cpu kv offload", "", &formats.LLMEngine{KVOffloadBytes: 64 << 30},
			[]string{`--kv-transfer-config={"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":{"block_size":16,"cpu_bytes_to_use":68719476736}}`}},
		{"prefill", llmspec.RolePrefill, &formats.LLMEngine{EnablePrefixCaching: new(true), Speculative: free},
			[]string{"--enable-prefix-caching", `--kv-transfer-config={"kv_connector":"NixlConnector","kv_role":"kv_producer"}`}},
		{"decode", llmspec.RoleDecode, &formats.LLMEngine{EnablePrefixCaching: new(true), Speculative: free},
			[]string{"--no-enable-prefix-caching", `--speculative-config={"method":"ngram","num_speculative_tokens":4}`, `--kv-transfer-config={"kv_connector":"NixlConnector","kv_role":"kv_consumer"}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := base
			p.Engine = tc.engine
			in := qlmsec.QLMInstance{Model: "m", GPU: "A100", GPUCount: 1, Role: tc.role}
			e, err := engine(llm.NewModel(&p), in, 3072, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := engineFlags(&e, llm.NewModel(&p), "profile", tc.role, "qlm.instances[0]"); err != nil {
				t.Fatal(err)
			}
			args := instance{engine: e, in: in}.args()
			// The flags after vLLM's sizing ones (model name and id, served name, backend,
			// TP, sequences, context, token budget, block size).
			got := args[9:]
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("args %q\nwant %q", got, tc.want)
			}
			back, err := engineFromArgs(args)
			if err != nil || !reflect.DeepEqual(back, e) {
				t.Errorf("read back %+v (%v), want %+v", back, err, e)
			}
		})
	}
}

// TestEngineFlagsRejects: a role that is none, and drafting that costs time without a
// draft model to run, fail naming the field.
func TestEngineFlagsRejects(t *testing.T) {
	p := formats.LLMProfile{Model: "m", GPU: "A100", Engine: &formats.LLMEngine{Speculative: &formats.LLMSpeculative{DraftTokens: 2, AcceptanceRate: 0.5, DraftStepUs: 800}}}
	for _, tc := range []struct {
		role, want string
	}{
		{"both", `qlm.instances[0].role: "both": must be one of prefill, decode`},
		{llmspec.RoleDecode, "profiles[0].llms[0].engine.speculative.draft_model: missing: drafting costs time (draft_step_us 800, draft_cost_ratio 0)"},
		{"", "profiles[0].llms[0].engine.speculative.draft_model: missing"},
	} {
		var e Engine
		if err := engineFlags(&e, llm.NewModel(&p), "profiles[0].llms[0]", tc.role, "qlm.instances[0]"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("role %q: err %v, want %q", tc.role, err, tc.want)
		}
	}
	off := formats.LLMProfile{Model: "m", GPU: "A100", Engine: &formats.LLMEngine{KVOffloadBytes: 1 << 30}}
	var eo Engine
	if err := engineFlags(&eo, llm.NewModel(&off), "profiles[0].llms[0]", llmspec.RoleDecode, "qlm.instances[0]"); err == nil || !strings.Contains(err.Error(), "profiles[0].llms[0].engine.kv_offload_bytes: 1073741824: on a decode instance, not exported") {
		t.Errorf("offload on a decode instance: %v", err)
	}
	// A prefill instance does not speculate: its missing draft model is no error.
	var e Engine
	if err := engineFlags(&e, llm.NewModel(&p), "profiles[0].llms[0]", llmspec.RolePrefill, "qlm.instances[0]"); err != nil || e.SpeculativeConfig != nil {
		t.Errorf("prefill: err %v, speculative_config %+v: want neither", err, e.SpeculativeConfig)
	}
}

// TestDisaggBadInput: the bundled bad plan (a role that is none) fails the export naming the
// instance's field, and files whose engines or replicas disagree with the record fail to
// read back.
func TestDisaggBadInput(t *testing.T) {
	// Parsed, not validated: QLM's own rules refuse the file on reading (formats.Decode);
	// the exporter must refuse such a plan handed to it in code too.
	const badFile = "../../testdata/disagg/bad/plan-role.json"
	if _, err := formats.ReadInto[*formats.Plan](badFile, intree.Sections()); err == nil || !strings.Contains(err.Error(), `qlm.instances[0].role: "both"`) {
		t.Errorf("reading %s: err %v", badFile, err)
	}
	data, err := os.ReadFile(badFile)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := formats.Parse(badFile, data, intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	bad := doc.(*formats.Plan)
	if _, err := exporter(t, export.KServe).Export(bad, export.Options{}); err == nil || !strings.Contains(err.Error(), `qlm.instances[0].role: "both"`) {
		t.Errorf("plan-role.json: err %v", err)
	}
	p := rolePlan(t)
	tests := []struct {
		target, file, old, new, want string
	}{
		{export.KServe, "inferenceservice-plan-decode.yaml", `"kv_role":"kv_consumer"`, `"kv_role":"kv_producer"`, "a decode instance whose engine is not a KV consumer"},
		{export.KServe, "inferenceservice-plan-prefill.yaml", "maxReplicas: 2", "maxReplicas: 3", "replicas 2..3"},
		{export.KServe, "inferenceservice-plan-prefill.yaml", "maxReplicas: 2\n    minReplicas: 2", "maxReplicas: 1\n    minReplicas: 1", "1 replica(s), the record lists 2 instance(s)"},
		{export.KServe, "inferenceservice-plan-decode.yaml", "plan.dev/qlm.role: decode", "plan.dev/qlm.role: prefill", "a prefill instance whose engine is not a KV producer"},
		{export.Ray, export.RayConfigFile, "max_replicas: 2", "max_replicas: 1", "1 replica(s), the record lists 2 instance(s)"},
		{export.Ray, export.RayConfigFile, "kv_role: kv_consumer", "kv_role: kv_both", "a decode instance whose engine is not a KV consumer"},
		{export.Triton, "plan-decode-0/config.pbtxt", "string_value: \"decode\"", "string_value: \"\"", "an aggregated instance whose engine has a kv_transfer_config"},
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
}
