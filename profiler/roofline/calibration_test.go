package roofline

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/profiler/zoo"
)

// ppipeModels are the PPipe evaluation models the zoo has (6 of 18: the detectors and the
// other segmenters are not built).
var ppipeModels = []string{"convnext-l", "efficientnet-b8", "inception-v3", "repvgg-b3", "wide-resnet101-2", "fcn-r101-d8"}

type calib struct {
	l4Ms       map[string]float64            // block-sum latency on L4, b=1
	medRatio   map[string]float64            // GPU → median over models of the per-model median block ratio to L4
	minRatio   map[string]float64            // GPU → smallest block ratio
	maxRatio   map[string]float64            // GPU → largest block ratio
	batch8     map[string]map[string]float64 // GPU → model → lat(8)/lat(1)
	slice      map[string][]float64          // GPU → v → lat(v)/lat(1) at b=1
	cutsMB     []float64
	perModelMd map[string]map[string]float64
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func measureCalibration(t testing.TB) *calib {
	c := &calib{l4Ms: map[string]float64{}, medRatio: map[string]float64{}, minRatio: map[string]float64{},
		maxRatio: map[string]float64{}, batch8: map[string]map[string]float64{}, slice: map[string][]float64{},
		perModelMd: map[string]map[string]float64{}}
	others := []string{"P4", "T4", "V100"}
	perModel := map[string][]float64{}
	for _, gpu := range others {
		c.minRatio[gpu], c.maxRatio[gpu] = 1e9, 0
		c.batch8[gpu] = map[string]float64{}
		c.perModelMd[gpu] = map[string]float64{}
	}
	c.batch8["L4"] = map[string]float64{}
	for _, name := range ppipeModels {
		g, err := zoo.Build(name)
		if err != nil {
			t.Fatal(err)
		}
		mp, err := Profile(g, Options{GPUs: []string{"L4", "P4", "T4", "V100"}, Noise: -1,
			DefaultGrid: []Point{{1, 1}, {1, 8}, {2, 1}, {3, 1}, {4, 1}}})
		if err != nil {
			t.Fatal(err)
		}
		get := func(gpu string, v, b int) *formats.LatencyEntry {
			e, ok := mp.Lookup(gpu, v, b)
			if !ok {
				t.Fatalf("%s: no entry %s v%d b%d", name, gpu, v, b)
			}
			return e
		}
		l4 := get("L4", 1, 1)
		c.l4Ms[name] = l4.WholeUs() / 1000
		c.batch8["L4"][name] = get("L4", 1, 8).WholeUs() / l4.WholeUs()
		for _, gpu := range others {
			e := get(gpu, 1, 1)
			var rs []float64
			for i := range e.BlockUs {
				r := e.BlockUs[i] / l4.BlockUs[i]
				rs = append(rs, r)
				c.minRatio[gpu] = min(c.minRatio[gpu], r)
				c.maxRatio[gpu] = max(c.maxRatio[gpu], r)
			}
			c.perModelMd[gpu][name] = median(rs)
			perModel[gpu] = append(perModel[gpu], median(rs))
			c.batch8[gpu][name] = get(gpu, 1, 8).WholeUs() / e.WholeUs()
		}
		for _, gpu := range []string{"L4", "T4", "V100"} {
			if name != ppipeModels[0] {
				continue
			}
			base := get(gpu, 1, 1).WholeUs()
			c.slice[gpu] = []float64{1}
			for v := 2; v <= 4; v++ {
				c.slice[gpu] = append(c.slice[gpu], get(gpu, v, 1).WholeUs()/base)
			}
		}
		for _, b := range mp.CutBytes {
			c.cutsMB = append(c.cutsMB, float64(b)/1e6)
		}
	}
	for gpu, xs := range perModel {
		c.medRatio[gpu] = median(xs)
	}
	return c
}

func (c *calib) String() string {
	var b strings.Builder
	for _, m := range ppipeModels {
		fmt.Fprintf(&b, "%-18s L4 %6.2f ms | ratio P4 %.2f T4 %.2f V100 %.2f | b8/b1 L4 %.2f P4 %.2f T4 %.2f V100 %.2f\n", m, c.l4Ms[m],
			c.perModelMd["P4"][m], c.perModelMd["T4"][m], c.perModelMd["V100"][m],
			c.batch8["L4"][m], c.batch8["P4"][m], c.batch8["T4"][m], c.batch8["V100"][m])
	}
	for _, g := range []string{"P4", "T4", "V100"} {
		fmt.Fprintf(&b, "%s/L4: median %.2f range %.2f–%.2f\n", g, c.medRatio[g], c.minRatio[g], c.maxRatio[g])
	}
	for _, g := range []string{"L4", "T4", "V100"} {
		fmt.Fprintf(&b, "%s slices: %.2f\n", g, c.slice[g])
	}
	fmt.Fprintf(&b, "cuts: median %.2f MB max %.1f MB (n=%d)\n", median(c.cutsMB), slices.Max(c.cutsMB), len(c.cutsMB))
	return b.String()
}

func TestCalibrationReport(t *testing.T) {
	c := measureCalibration(t)
	t.Log("\n" + c.String())
}
