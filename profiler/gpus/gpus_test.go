package gpus

import (
	"strings"
	"testing"
)

func TestTable(t *testing.T) {
	want := []string{"P4", "T4", "L4", "A10", "V100", "L40S", "A100", "H100", "H200", "B200"}
	if got := strings.Join(Names(), ","); got != strings.Join(want, ",") {
		t.Fatalf("Names() = %s", got)
	}
	for _, s := range All() {
		if s.FP32TFLOPS <= 0 || s.MemBWGBps <= 0 || s.SMs <= 0 || s.MemoryBytes <= 0 || s.L2Bytes <= 0 || s.MaxVGPU < 1 {
			t.Errorf("%s: incomplete spec %+v", s.Name, s)
		}
		if s.Class != "high" && s.Class != "low" {
			t.Errorf("%s: class %q", s.Name, s.Class)
		}
	}
	l4, err := Lookup("l4")
	if err != nil || l4.PeakTFLOPS(l4.DefaultPrecision()) != 60 {
		t.Errorf("L4 TF32 peak: %v %v", l4.PeakTFLOPS(TF32), err)
	}
	p4, _ := Lookup("P4")
	if p4.DefaultPrecision() != FP32 || p4.PeakTFLOPS(TF32) != 5.5 {
		t.Errorf("P4 falls back to FP32: %v", p4.PeakTFLOPS(TF32))
	}
	if _, err := Lookup("K80"); err == nil || !strings.Contains(err.Error(), "H100") {
		t.Errorf("unknown GPU: %v", err)
	}
}
