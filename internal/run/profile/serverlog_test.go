package profile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run"
)

var serverLogs = filepath.Join("..", "..", "..", "profiler", "llm", "testdata", "serverlogs")

// TestServerLogPrecedence: --vllm-log fills the engine settings, the tensor-parallel degree,
// the KV dtype and the KV capacity of an --llm estimate; an explicit flag wins over the log,
// and --kv-capacity-tokens over the log's KV size.
func TestServerLogPrecedence(t *testing.T) {
	dir := t.TempDir()
	v1 := filepath.Join(serverLogs, "v1-0.11.log")
	for _, c := range []struct {
		name string
		args Args
		// want: the profile's engine settings, degree and KV capacity
		seqs, batched, maxLen, gpus int
		version, note               string
		kv                          int64
	}{
		{name: "log only", args: Args{}, seqs: 128, batched: 4096, maxLen: 8192, gpus: 2, version: "0.11", kv: 686320,
			note: "KV capacity 686320 tokens (GPU KV cache size: 686,320 tokens)"},
		{name: "flags win", args: Args{Engine: &formats.LLMEngine{MaxNumSeqs: 64, VLLMVersion: "0.10"}, EngineFlags: []string{"max-num-seqs", "vllm-version"},
			KVCapacityTokens: 50000, KVCapacityTokensSet: true},
			seqs: 64, batched: 4096, maxLen: 8192, gpus: 2, version: "0.10", kv: 50000, note: "the flags win: --vllm-version 0.10 over the log's 0.11.0; --max-num-seqs over the log's max_num_seqs 128"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := c.args
			a.VLLMLog, a.LLM, a.GPUs, a.Out = v1, "llama-3.1-8b", []string{"H100"}, filepath.Join(dir, c.name+".json")
			a.Partition, a.Blocks, a.Link = "min-traffic", 10, "auto"
			io, _, errb := calibrateIO()
			if err := Run(context.Background(), a, io); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(errb.String(), c.note) {
				t.Errorf("stderr does not say %q:\n%s", c.note, errb.String())
			}
			doc, err := formats.ReadProfileFor(a.Out, formats.UsePlan)
			if err != nil {
				t.Fatal(err)
			}
			p := doc.LLMs[0]
			e := p.Engine
			if e == nil || e.MaxNumSeqs != c.seqs || e.MaxNumBatchedTokens != c.batched || e.MaxModelLen != c.maxLen || e.VLLMVersion != c.version || p.GPUCount != c.gpus || p.KVCapacityTokens != c.kv {
				t.Errorf("engine %+v, %d GPUs, KV %d; want seqs %d, batched %d, len %d, version %s, %d GPUs, KV %d", e, p.GPUCount, p.KVCapacityTokens, c.seqs, c.batched, c.maxLen, c.version, c.gpus, c.kv)
			}
			if p.Engine.GPUMemoryUtilization != 0.85 || p.Engine.EnablePrefixCaching == nil || *p.Engine.EnablePrefixCaching {
				t.Errorf("engine %+v: want the log's gpu_memory_utilization 0.85 and no prefix caching", e)
			}
		})
	}
}

// TestServerLogRefuses: --vllm-log where its settings cannot apply, or with a bad log, is an
// exit-2 error naming the flag (and the log and key).
func TestServerLogRefuses(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.json")
	bad := filepath.Join(dir, "bad.log")
	writeFile(t, bad, "INFO non-default args: {'max_num_seqs': 0}\n")
	old := filepath.Join(dir, "old.log")
	writeFile(t, old, "INFO vLLM API server version 0.4.2\n")
	for _, c := range []struct {
		name string
		args Args
		want string
	}{
		{"with --profile", Args{VLLMLog: filepath.Join(serverLogs, "v1-0.11.log"), Calibrate: []string{benchFixture}, Profile: "p.json", Out: out}, "--vllm-log: not with --calibrate --profile p.json"},
		{"no LLM", Args{VLLMLog: filepath.Join(serverLogs, "v1-0.11.log"), Zoo: "resnet50", Out: out}, "--vllm-log: a vLLM server's log: only with an LLM"},
		{"missing", Args{VLLMLog: filepath.Join(dir, "none.log"), LLM: "llama-3.1-8b", Out: out}, "--vllm-log: "},
		{"bad value", Args{VLLMLog: bad, LLM: "llama-3.1-8b", Out: out}, "bad.log: max_num_seqs: \"0\": must be a whole number in [1, 65536]"},
		{"old version", Args{VLLMLog: old, LLM: "llama-3.1-8b", Out: out}, "old.log: vLLM version 0.4.2: not modelled"},
	} {
		t.Run(c.name, func(t *testing.T) {
			io, _, _ := calibrateIO()
			err := Run(context.Background(), c.args, io)
			var ee *run.ExitError
			if !errors.As(err, &ee) || ee.Code != run.ExitUsage || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want exit 2 saying %q", err, c.want)
			}
		})
	}
}

// profileOne runs plan profile with a, which profiles one LLM, and returns that profile and
// what the run wrote to stderr.
func profileOne(t *testing.T, a Args) (formats.LLMProfile, *strings.Builder) {
	t.Helper()
	io, _, errb := calibrateIO()
	if err := Run(context.Background(), a, io); err != nil {
		t.Fatal(err)
	}
	doc, err := formats.ReadProfileFor(a.Out, formats.UsePlan)
	if err != nil {
		t.Fatal(err)
	}
	return doc.LLMs[0], errb
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestServerLogHybridKVOff: a server started with --disable-hybrid-kv-cache-manager (the
// log's non-default args) profiles its sliding-window model as vLLM ran it: the engine block
// says so and the KV cache is one group, where the same model under vLLM's default is two.
func TestServerLogHybridKVOff(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "gptoss.log")
	writeFile(t, log, "INFO vLLM API server version 0.15.1\n"+
		"INFO non-default args: {'model': 'openai/gpt-oss-20b', 'max_num_seqs': 128, 'disable_hybrid_kv_cache_manager': True}\n")
	for _, c := range []struct {
		name string
		log  bool
		off  bool
	}{{"default", false, false}, {"log", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			a := Args{LLM: "gpt-oss-20b", GPUs: []string{"H100"}, Out: filepath.Join(dir, c.name+".json"), Partition: "min-traffic", Blocks: 10, Link: "auto"}
			if c.log {
				a.VLLMLog = log
			}
			p, errb := profileOne(t, a)
			if off := p.Engine != nil && p.Engine.DisableHybridKVCacheManager; off != c.off || (p.KVGroups == nil) != c.off {
				t.Errorf("engine %+v, kv_groups %+v: want the hybrid manager off %v\n%s", p.Engine, p.KVGroups, c.off, errb.String())
			}
			if c.log && !strings.Contains(errb.String(), "disable_hybrid_kv_cache_manager True") {
				t.Errorf("stderr does not say what it took from the log:\n%s", errb.String())
			}
		})
	}
}

// TestServerLogEngineArgs: the log's scheduling, chunked-prefill and swap settings fill the
// engine block, and the arguments plan does not model (eager execution, pipeline
// parallelism, a KV connector) are named in a warning rather than dropped in silence.
func TestServerLogEngineArgs(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "server.log")
	writeFile(t, log, "INFO vLLM API server version 0.15.1\n"+
		"INFO non-default args: {'model': 'meta-llama/Llama-3.1-8B-Instruct', 'max_num_batched_tokens': 8192, 'max_model_len': 8192, "+
		"'enable_chunked_prefill': False, 'max_num_partial_prefills': 2, 'scheduling_policy': 'priority', 'swap_space': 4.0, "+
		"'enforce_eager': True, 'pipeline_parallel_size': 2, 'data_parallel_size': 1, 'cpu_offload_gb': 0, "+
		"'kv_transfer_config': {'kv_connector': 'LMCacheConnectorV1', 'kv_role': 'kv_both'}}\n")
	a := Args{LLM: "llama-3.1-8b", GPUs: []string{"H100"}, Out: filepath.Join(dir, "p.json"), Partition: "min-traffic", Blocks: 10, Link: "auto", VLLMLog: log}
	p, errb := profileOne(t, a)
	e := p.Engine
	if e == nil || e.Chunked() || e.MaxNumPartialPrefills != 2 || e.SchedulingPolicy != "priority" || e.SwapSpace != 4 {
		t.Errorf("engine %+v: want chunked prefill off, 2 partial prefills, priority, 4 GiB swap", e)
	}
	for _, w := range []string{"enforce_eager True", "pipeline_parallel_size 2", "kv_transfer_config (a KV connector"} {
		if !strings.Contains(errb.String(), w) {
			t.Errorf("stderr does not warn of %q:\n%s", w, errb.String())
		}
	}
	for _, w := range []string{"data_parallel_size", "cpu_offload_gb"} {
		if strings.Contains(errb.String(), w) {
			t.Errorf("stderr warns of %s at its default:\n%s", w, errb.String())
		}
	}
}

// TestServerLogModel: with no model named, --vllm-log profiles the model the server ran (its
// model argument, a Hugging Face id, as --llm takes it) with the log's settings; a log that
// names no model, or one plan has no shapes for, is an exit-2 error naming the log.
func TestServerLogModel(t *testing.T) {
	dir := t.TempDir()
	a := Args{GPUs: []string{"H100"}, Out: filepath.Join(dir, "p.json"), Partition: "min-traffic", Blocks: 10, Link: "auto",
		VLLMLog: filepath.Join(serverLogs, "v1-0.11.log")}
	p, errb := profileOne(t, a)
	if p.Model != "llama-3.1-8b" || p.GPUCount != 2 || p.Engine == nil || p.Engine.MaxNumSeqs != 128 {
		t.Errorf("profiled %s on %d GPUs, engine %+v: want the log's llama-3.1-8b at its TP 2 and 128 sequences", p.Model, p.GPUCount, p.Engine)
	}
	if !strings.Contains(errb.String(), "the model meta-llama/Llama-3.1-8B-Instruct") {
		t.Errorf("stderr does not say the model came from the log:\n%s", errb.String())
	}
	none := filepath.Join(dir, "none.log")
	writeFile(t, none, "INFO vLLM API server version 0.15.1\nINFO non-default args: {'max_num_seqs': 64}\n")
	other := filepath.Join(dir, "other.log")
	writeFile(t, other, "INFO vLLM API server version 0.15.1\nINFO non-default args: {'model': 'acme/Foo-7B'}\n")
	for _, c := range []struct{ log, want string }{
		{none, "none.log: the log names no model"},
		{other, `other.log: model: "acme/Foo-7B"`},
	} {
		b := a
		b.VLLMLog, b.Out = c.log, filepath.Join(dir, "x.json")
		io, _, _ := calibrateIO()
		err := Run(context.Background(), b, io)
		var ee *run.ExitError
		if !errors.As(err, &ee) || ee.Code != run.ExitUsage || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want exit 2 saying %q", err, c.want)
		}
		if _, err := os.Stat(b.Out); err == nil {
			t.Errorf("%s: wrote %s", c.log, b.Out)
		}
	}
}
