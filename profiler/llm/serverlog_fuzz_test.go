package llm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseServerLog: any bytes given as a vLLM server log are read without panicking; a
// log that reads holds at least one start-up fact (version, arguments or KV capacity) and a
// capacity that is positive when stated; one that does not is refused naming the file.
func FuzzParseServerLog(f *testing.F) {
	for _, name := range []string{"v1-0.11.log", "v0-0.6.log"} {
		data, err := os.ReadFile(filepath.Join("testdata", "serverlogs", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("INFO non-default args: {'model': 'a\\'b', 'x': [1, (2, {3: '}'})], 'y': None}\n"))
	f.Add([]byte("INFO args: Namespace(model='m', block_size=32, z=f(a=')'))\nINFO # GPU blocks: 1,024, # CPU blocks: 2\n"))
	f.Add([]byte("vLLM API server version v0.15.1\nGPU KV cache size: 0 tokens\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ParseServerLog("f.log", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.log") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if l.Version == "" && len(l.Args) == 0 && l.KVTokens == 0 {
			t.Fatal("a log read with no start-up fact")
		}
		if l.KVTokens < 0 || (l.KVTokens > 0) != (l.KVFrom != "") || (l.KVTokens > 0 && l.KVLines == 0) {
			t.Fatalf("KV %d from %q over %d lines", l.KVTokens, l.KVFrom, l.KVLines)
		}
	})
}

// FuzzLookupHF: any id is resolved or refused without panicking, and what resolves is a
// catalogue model whose shapes are whole.
func FuzzLookupHF(f *testing.F) {
	for _, id := range []string{"meta-llama/Llama-3.1-8B-Instruct", "mistralai/Mixtral-8x7B-v0.1", "Meta-Llama-3.1-70B-Instruct-FP8",
		"RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic", "mistralai/Mistral-7B-v0.1", "-", "/", "a/b/c", "instruct-chat-base", ""} {
		f.Add(id)
	}
	f.Fuzz(func(t *testing.T, id string) {
		m, err := LookupHF(id)
		if err != nil {
			return
		}
		if m.Name == "" || m.Layers <= 0 || m.Hidden <= 0 || m.Heads <= 0 || m.Vocab <= 0 {
			t.Fatalf("%q resolved to a model without shapes: %+v", id, m)
		}
	})
}
