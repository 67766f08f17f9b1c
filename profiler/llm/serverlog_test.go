package llm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseServerLog: a V1 log (non-default args, "GPU KV cache size") and a V0 log (every
// argument in a Namespace, "# GPU blocks" times the block size) read as logged; a file with no
// vLLM start-up line, and a bad count, are errors naming the file.
func TestParseServerLog(t *testing.T) {
	for _, c := range []struct {
		file, version string
		kv            int64
		kvFrom        string
		args          map[string]string
	}{
		{"v1-0.11.log", "0.11.0", 686320, "GPU KV cache size: 686,320 tokens", map[string]string{
			"tensor_parallel_size": "2", "max_num_seqs": "128", "max_num_batched_tokens": "4096", "max_model_len": "8192",
			"gpu_memory_utilization": "0.85", "enable_prefix_caching": "False", "kv_cache_dtype": "fp8",
			"model": "meta-llama/Llama-3.1-8B-Instruct", "served_model_name": "['llama']",
			"lora_modules": "[LoRAModulePath(name='a, b', path='/x', base_model_name=None)]"}},
		{"v0-0.6.log", "0.6.3.post1", 27153 * 16, "# GPU blocks: 27153 × block size 16", map[string]string{
			"tensor_parallel_size": "1", "max_num_seqs": "256", "max_num_batched_tokens": "None", "kv_cache_dtype": "auto", "block_size": "16"}},
	} {
		t.Run(c.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "serverlogs", c.file))
			if err != nil {
				t.Fatal(err)
			}
			l, err := ParseServerLog(c.file, data)
			if err != nil {
				t.Fatal(err)
			}
			if l.Version != c.version || l.KVTokens != c.kv || l.KVFrom != c.kvFrom || l.KVLines != 1 {
				t.Errorf("version %q, KV %d (%q, %d lines); want %q, %d (%q)", l.Version, l.KVTokens, l.KVFrom, l.KVLines, c.version, c.kv, c.kvFrom)
			}
			for k, v := range c.args {
				if l.Args[k] != v {
					t.Errorf("%s = %q, want %q", k, l.Args[k], v)
				}
			}
		})
	}
	for _, c := range []struct{ name, data, want string }{
		{"no vllm line", "hello\nworld\n", "no vLLM start-up lines"},
		{"bad dict", "INFO non-default args: {'max_num_seqs' 128}\n", "x.log:1: non-default args: "},
		{"zero blocks", "INFO # GPU blocks: 0, # CPU blocks: 1\n", "x.log:1: # GPU blocks: \"0\""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseServerLog("x.log", []byte(c.data))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
}
