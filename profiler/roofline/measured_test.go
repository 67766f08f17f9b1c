package roofline

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/plan-dev/plan/profiler/zoo"
)

// TestMeasuredH100 bounds the H100 extrapolation by one real measurement (CALIBRATION.md,
// "Measured on a GPU"): torchvision builds of six zoo models on an H100, TF32, BatchNorm
// folded, CUDA graphs (testdata/gpu/h100-torch.json). At batch 8, where PyTorch is not bound
// by kernel launches, the whole-model estimate must stay within ×0.6–1.6 of the measured
// time for every model and within ×0.8–1.25 in the median (measured: ×0.68–1.52, median
// ×0.97). A change of the H100 constants or of the zoo builds that breaks this is one the
// measurement contradicts.
func TestMeasuredH100(t *testing.T) {
	var m struct {
		CNN []struct {
			Model string  `json:"model"`
			Batch int     `json:"batch"`
			Ms    float64 `json:"ms"`
		} `json:"cnn"`
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "gpu", "h100-torch.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var ratios []float64
	for _, r := range m.CNN {
		if r.Batch != 8 {
			continue
		}
		g, err := zoo.Build(r.Model)
		if err != nil {
			t.Fatal(err)
		}
		mp, err := Profile(g, Options{GPUs: []string{"H100"}, Noise: -1, DefaultGrid: []Point{{1, 8}}})
		if err != nil {
			t.Fatal(err)
		}
		e, ok := mp.Lookup("H100", 1, 8)
		if !ok {
			t.Fatalf("%s: no H100 entry at batch 8", r.Model)
		}
		ratio := e.WholeUs() / 1000 / r.Ms
		ratios = append(ratios, ratio)
		if ratio < 0.6 || ratio > 1.6 {
			t.Errorf("%s b=8: estimate %.2f ms, measured %.2f ms (×%.2f)", r.Model, e.WholeUs()/1000, r.Ms, ratio)
		}
	}
	if len(ratios) != 6 {
		t.Fatalf("%d models at batch 8 in the fixture, want 6", len(ratios))
	}
	if md := median(ratios); md < 0.8 || md > 1.25 {
		t.Errorf("median estimate/measured at b=8: ×%.2f", md)
	}
}
