package llm

import (
	"testing"

	"github.com/plan-dev/plan/profiler/gpus"
	"github.com/plan-dev/plan/profiler/roofline"
)

// TestAllReduceKernel: vLLM's custom all-reduce runs over NVLink at every supported size
// and over PCIe only between two GPUs (custom_all_reduce.py disables it "on more than two
// PCIe-only GPUs"); beyond that the step pays NCCL's all-reduce.
func TestAllReduceKernel(t *testing.T) {
	m, _ := Lookup("llama-3.1-8b")
	for _, c := range []struct {
		gpu  string
		tp   int
		want string // the table the decode step's all-reduce reads
	}{
		{"H100", 2, "custom_allreduce"},
		{"H100", 4, "custom_allreduce"},
		{"A100", 8, "custom_allreduce"},
		{"L40S", 2, "custom_allreduce"},
		{"L40S", 4, "nccl"},
		{"L40S", 8, "nccl"},
	} {
		g, err := gpus.Lookup(c.gpu)
		if err != nil {
			t.Fatal(err)
		}
		d, err := NewDeployment(m, g, c.tp, roofline.LinkAuto)
		if err != nil {
			t.Fatalf("%s TP %d: %v", c.gpu, c.tp, err)
		}
		var got []string
		for _, s := range d.Decode(32, 1024).Sources {
			if s.Term == "allreduce" && s.Point.Slice != "all_gather" {
				got = append(got, s.Point.Table+"["+s.Point.Slice+"]")
				if s.Point.Table != c.want {
					t.Errorf("%s TP %d: all-reduce read %s[%s], want %s", c.gpu, c.tp, s.Point.Table, s.Point.Slice, c.want)
				}
			}
		}
		if len(got) == 0 {
			t.Errorf("%s TP %d: no all-reduce source", c.gpu, c.tp)
		}
	}
}
