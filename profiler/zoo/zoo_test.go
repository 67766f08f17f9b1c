package zoo

import (
	"strings"
	"testing"

	"github.com/plan-dev/plan/profiler/graph"
)

// Published sizes (parameters in millions, GFLOPs = 2 × multiply-accumulates at batch 1).
// The builders omit biases-free details and auxiliary heads, so allow a few percent.
var published = map[string]struct {
	paramsM, gflops, tol float64
}{
	"resnet50":         {25.6, 8.2, 0.05},
	"resnet101":        {44.5, 15.7, 0.05},
	"wide-resnet101-2": {126.9, 45.6, 0.05},
	"efficientnet-b0":  {5.3, 0.78, 0.10},
	"efficientnet-b8":  {87.4, 126, 0.15},
	"convnext-l":       {197.8, 68.6, 0.05},
	"inception-v3":     {23.8, 11.5, 0.10},
	"repvgg-b3":        {110.9, 52.4, 0.05},
	"bert-base":        {109.5, 22.4, 0.15},
	"efficientdet-d1":  {6.6, 12.2, 0.10},
	"bert-large":       {335.1, 79.3, 0.15},
}

func TestZooSizes(t *testing.T) {
	for _, name := range Names() {
		g, err := Build(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := g.Validate(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		p := float64(g.TotalParamBytes()) / 4 / 1e6
		f := g.TotalFLOPs() / 1e9
		cut := graph.AllCutBytes(g)
		var maxCut int64
		for _, c := range cut {
			maxCut = max(maxCut, c)
		}
		t.Logf("%-18s nodes %4d params %7.1f M  GFLOPs %7.1f  max cut %6.1f MB", name, len(g.Nodes), p, f, float64(maxCut)/1e6)
		want, ok := published[name]
		if !ok {
			continue
		}
		if d := p/want.paramsM - 1; d > want.tol || d < -want.tol {
			t.Errorf("%s: %.1f M params, published %.1f M", name, p, want.paramsM)
		}
		if d := f/want.gflops - 1; d > want.tol || d < -want.tol {
			t.Errorf("%s: %.1f GFLOPs, published %.1f", name, f, want.gflops)
		}
	}
}

func TestBuildUnknown(t *testing.T) {
	_, err := Build("resnet9000")
	if err == nil || !strings.Contains(err.Error(), "resnet50") {
		t.Fatalf("got %v, want an error listing the names", err)
	}
}
