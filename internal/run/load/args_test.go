package load

import (
	"slices"
	"testing"
)

// TestVLLMSetOrder: a KServe run names the first vllm bench option given in the order the
// command has always checked them, and the dataset options need --dataset-name.
func TestVLLMSetOrder(t *testing.T) {
	all := VLLMSet{true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true}
	want := []string{"dataset-name", "dataset-path", "dataset-timestamps", "burstiness", "max-concurrency", "num-warmups",
		"goodput", "percentile-metrics", "metric-percentiles", "save-result", "save-detailed", "result-dir", "result-filename", "label", "metadata",
		"random-input-len", "random-output-len", "random-range-ratio", "sharegpt-output-len"}
	if got := all.given(); !slices.Equal(got, want) {
		t.Errorf("given() = %v, want %v", got, want)
	}
	if got := all.datasetGiven(); !slices.Equal(got, []string{"dataset-path", "dataset-timestamps", "random-input-len", "random-output-len", "random-range-ratio", "sharegpt-output-len"}) {
		t.Errorf("datasetGiven() = %v", got)
	}
	if got := (VLLMSet{Label: true, Goodput: true}).given(); !slices.Equal(got, []string{"goodput", "label"}) {
		t.Errorf("given() = %v", got)
	}
	if got := (VLLMSet{}).given(); got != nil {
		t.Errorf("nothing set: given() = %v", got)
	}
}

func TestTakeGoodputArgs(t *testing.T) {
	goodput, rest := TakeGoodputArgs([]string{"ttft:200"}, []string{"tpot:50", "http://127.0.0.1:8000", "e2el:1000"})
	if !slices.Equal(goodput, []string{"ttft:200", "tpot:50", "e2el:1000"}) || !slices.Equal(rest, []string{"http://127.0.0.1:8000"}) {
		t.Errorf("TakeGoodputArgs = %v, %v", goodput, rest)
	}
}
