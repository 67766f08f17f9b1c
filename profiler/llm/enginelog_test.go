package llm

import (
	"reflect"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
)

// TestStepLogEngine: a step log's vllm_version sets the scheduling rules that version used
// by default (LLM engine digest part 2, §1: V0 before 0.8, V1 without the full-prompt
// admission check up to 0.11, synchronous V1 to 0.13, async scheduling from 0.14), flags
// the log states override them, an unmodelled version is said and read as the default, and
// bad values are errors naming the file, the line, the field and the value.
func TestStepLogEngine(t *testing.T) {
	const steps = "1,0,0.007\n512,512,0.03\n"
	for _, tc := range []struct {
		name, head, cells string
		want              *formats.LLMEngine
		note, err         string
	}{
		{name: "no settings", want: nil},
		{name: "V0", head: "vllm_version", cells: "0.6.3",
			want: &formats.LLMEngine{KVAllocation: formats.KVAllocAdmission, Release: formats.ReleaseNextStep, EnablePrefixCaching: new(false), VLLMVersion: "0.6"}, note: "the V0 engine"},
		{name: "V0 post release", head: "vllm_version", cells: "v0.7.3.post1",
			want: &formats.LLMEngine{KVAllocation: formats.KVAllocAdmission, Release: formats.ReleaseNextStep, EnablePrefixCaching: new(false), VLLMVersion: "0.7"}, note: "vllm_version 0.7"},
		{name: "V1 before the full-prompt check", head: "vllm_version", cells: "0.11.0",
			want: &formats.LLMEngine{KVAllocation: formats.KVAllocChunk, Release: formats.ReleaseSameStep, EnablePrefixCaching: new(true), VLLMVersion: "0.11"}, note: "before scheduler_reserve_full_isl"},
		{name: "V1 synchronous", head: "vllm_version", cells: "0.13.0",
			want: &formats.LLMEngine{EnablePrefixCaching: new(true), VLLMVersion: "0.13"}, note: "synchronous scheduling"},
		{name: "current V1", head: "vllm_version", cells: "0.15.1",
			want: &formats.LLMEngine{Release: formats.ReleaseNextStep, EnablePrefixCaching: new(true), VLLMVersion: "0.15"}, note: "async scheduling"},
		{name: "unmodelled version", head: "vllm_version", cells: "0.5.4",
			want: &formats.LLMEngine{Release: formats.ReleaseNextStep, EnablePrefixCaching: new(true), VLLMVersion: "0.15"}, note: "vLLM version 0.5: not modelled"},
		{name: "flags over the version", head: "vllm_version,kv_allocation,enable_prefix_caching,block_size,max_num_batched_tokens,max_num_seqs", cells: "0.6.3,chunk,true,32,8192,1024",
			want: &formats.LLMEngine{KVAllocation: formats.KVAllocChunk, Release: formats.ReleaseNextStep, EnablePrefixCaching: new(true), BlockSize: 32, MaxNumBatchedTokens: 8192, MaxNumSeqs: 1024, VLLMVersion: "0.6"}},
		{name: "flags alone", head: "release", cells: "next_step", want: &formats.LLMEngine{Release: formats.ReleaseNextStep}},
		{name: "bad version", head: "vllm_version", cells: "latest", err: `s.csv: line 2: vllm_version: "latest": must be a vLLM version`},
		{name: "bad allocation", head: "kv_allocation", cells: "eager", err: `s.csv: line 2: kv_allocation: "eager": must be one of admission, chunk, chunk_full_prompt_check`},
		{name: "block size not a power of two", head: "block_size", cells: "24", err: `s.csv: line 2: block_size: "24": must be a power of two`},
		{name: "caching not a bool", head: "enable_prefix_caching", cells: "maybe", err: `s.csv: line 2: enable_prefix_caching: "maybe": must be true or false`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := "tokens,prefill_tokens,seconds\n" + steps
			if tc.head != "" {
				var b strings.Builder
				b.WriteString("tokens,prefill_tokens,seconds," + tc.head + "\n")
				for _, l := range strings.Split(strings.TrimSpace(steps), "\n") {
					b.WriteString(l + "," + tc.cells + "\n")
				}
				data = b.String()
			}
			l, err := ReadStepLog("s.csv", []byte(data))
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, notes := l.Engine()
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("engine %+v, want %+v", got, tc.want)
			}
			if tc.note != "" && (len(notes) == 0 || !strings.Contains(strings.Join(notes, "; "), tc.note)) {
				t.Errorf("notes %q, want one containing %q", notes, tc.note)
			}
		})
	}
}

// TestStepLogEngineJSONL: the settings keys of a JSONL log are read as the CSV columns are,
// whatever JSON scalar spells them.
func TestStepLogEngineJSONL(t *testing.T) {
	data := `{"tokens": 1, "prefill_tokens": 0, "seconds": 0.007, "vllm_version": "0.6.3", "enable_prefix_caching": true, "block_size": 16}` + "\n" +
		`{"tokens": 512, "prefill_tokens": 512, "seconds": 0.03, "vllm_version": "0.6.3"}` + "\n"
	l, err := ReadStepLog("s.jsonl", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := l.Engine()
	want := &formats.LLMEngine{KVAllocation: formats.KVAllocAdmission, Release: formats.ReleaseNextStep, EnablePrefixCaching: new(true), BlockSize: 16, VLLMVersion: "0.6"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("engine %+v, want %+v", got, want)
	}
	if _, err := ReadStepLog("s.jsonl", []byte(`{"tokens": 1, "prefill_tokens": 0, "seconds": 0.007, "vllm_version": "0.6.3"}`+"\n"+`{"tokens": 1, "prefill_tokens": 0, "seconds": 0.007, "vllm_version": "0.11.0"}`)); err == nil ||
		!strings.Contains(err.Error(), `line 2: vllm_version: "0.11": differs from line 1's "0.6"`) {
		t.Errorf("a log of two versions: %v", err)
	}
}
