package qlm

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/planner/fleet"
	"github.com/plan-dev/plan/profiler/llm"
)

// mixedProfiles are roofline LLM profiles of model on L4, A10, A100 and H100.
func mixedProfiles(t testing.TB, model string) ([]*formats.Profile, *formats.Cluster) {
	t.Helper()
	p := &formats.Profile{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindProfile}}
	c := &formats.Cluster{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindCluster}, NICGbps: 100}
	for _, g := range []string{"L4", "A10", "A100", "H100"} {
		l, err := llm.Estimate(model, g)
		if err != nil {
			t.Fatal(err)
		}
		p.LLMs = append(p.LLMs, *l)
		c.GPUs = append(c.GPUs, formats.GPUPool{Type: g, PerServer: 8})
	}
	return []*formats.Profile{p}, c
}

// TestSizeBucketsMix: short requests go to cheap GPUs and long ones to fast GPUs when the
// SLO is tight, so the mixed fleet costs less than the cheapest single type (Mélange §3),
// and the fleet serves every bucket (shares sum to one).
func TestSizeBucketsMix(t *testing.T) {
	profs, c := mixedProfiles(t, "mistral-7b")
	buckets := []Bucket{
		// Rates where one H100 no longer covers both buckets (with the kernel-calibrated
		// H100 roofline it did at 20 and 4 req/s, and no mix could be cheaper).
		{Model: "mistral-7b", Class: "short", Input: 100, Output: 40, Rate: 100, SLO: 6 * time.Second},
		{Model: "mistral-7b", Class: "long", Input: 3000, Output: 300, Rate: 20, SLO: 6 * time.Second},
	}
	res, err := SizeBuckets(context.Background(), profs, c, buckets, CostSLOFraction, 0, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	single, typ := CheapestSingleType(context.Background(), profs, c, buckets, CostSLOFraction)
	if !(res.Cost < single) {
		t.Errorf("mixed fleet %.2f/h (%v), cheapest single type %s %.2f/h: want the mix cheaper", res.Cost, res.Sizing.Count, typ, single)
	}
	for d, sh := range res.Sizing.Share {
		s := 0.0
		for _, x := range sh {
			s += x
		}
		if math.Abs(s-1) > 1e-6 {
			t.Errorf("bucket %d: shares sum to %g", d, s)
		}
	}
	// The plan records the split so the runtime routes by it: one route per bucket, its
	// shares summing to one, on GPU types the fleet has.
	if len(res.Routes) != len(buckets) {
		t.Fatalf("routes %+v: want one per bucket (%d)", res.Routes, len(buckets))
	}
	used := map[string]bool{}
	for _, in := range res.Instances {
		used[in.GPU] = true
	}
	for i, r := range res.Routes {
		s := 0.0
		for _, g := range r.GPUs {
			s += g.Share
			if !used[g.GPU] {
				t.Errorf("route %d: GPU type %s has no instance", i, g.GPU)
			}
		}
		if r.Class != buckets[i].Class || r.InputTokens != buckets[i].Input || math.Abs(s-1) > 1e-5 {
			t.Errorf("route %d = %+v: want class %s, %g input tokens, shares summing to 1", i, r, buckets[i].Class, buckets[i].Input)
		}
	}
}

// TestSolveCostShort: a class rate beyond the available GPUs is an infeasible-input error
// naming the share of the rates the available fleet serves.
func TestSolveCostShort(t *testing.T) {
	profs, c := mixedProfiles(t, "mistral-7b")
	one := 1
	for i := range c.GPUs {
		c.GPUs[i].Available = &one
	}
	w := llmspec.SetClasses(&formats.Workload{}, []llmspec.LLMClass{{Name: "chat", Model: "mistral-7b", SLO: formats.Duration(20 * time.Second), RateRPS: 500,
		InputTokens: llmspec.TokenProfile{Mean: 200, Std: 100, Max: 2048}, OutputTokens: llmspec.TokenProfile{Mean: 200, Std: 100, Max: 1024}}})
	_, err := SolveCost(context.Background(), planner.Inputs{Profiles: profs, Cluster: c, Workload: w}, Options{Sim: testSim}, 0, 1e-4)
	if err == nil {
		t.Fatal("no error")
	}
	var se *fleet.ShortError
	if !errorsAs(err, &se) || se.Scale >= 1 {
		t.Fatalf("err = %v, want a *fleet.ShortError with scale < 1", err)
	}
}

// azureBuckets bins a trace's (context, generated) tokens into log-spaced buckets (input
// edges 128·2^i, output edges 16·4^i), each at its members' mean lengths, at a total rate.
func azureBuckets(tb testing.TB, path, model string, rate float64, slo time.Duration) []Bucket {
	f, err := os.Open(path)
	if err != nil {
		tb.Skipf("trace %s: %v", path, err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		tb.Fatal(err)
	}
	inEdges := []float64{128, 256, 512, 1024, 2048, 4096, 8192, math.Inf(1)}
	outEdges := []float64{16, 64, 256, 1024, math.Inf(1)}
	type acc struct{ n, in, out float64 }
	bins := map[[2]int]*acc{}
	total := 0.0
	for _, r := range recs[1:] {
		in, _ := strconv.ParseFloat(r[1], 64)
		out, _ := strconv.ParseFloat(r[2], 64)
		if out < 1 {
			out = 1
		}
		i, o := 0, 0
		for in > inEdges[i] {
			i++
		}
		for out > outEdges[o] {
			o++
		}
		a := bins[[2]int{i, o}]
		if a == nil {
			a = &acc{}
			bins[[2]int{i, o}] = a
		}
		a.n++
		a.in += in
		a.out += out
		total++
	}
	var out []Bucket
	for i := range inEdges {
		for o := range outEdges {
			if a := bins[[2]int{i, o}]; a != nil {
				out = append(out, Bucket{Model: model, Class: fmt.Sprintf("b%d_%d", i, o), Input: math.Round(a.in / a.n), Output: math.Round(a.out / a.n), Rate: rate * a.n / total, SLO: slo})
			}
		}
	}
	return out
}

// BenchmarkCostAzure reports the least-cost mixed fleet against the cheapest single GPU type
// (default list prices) on the Azure LLM conversation and code traces' token-length mixes
// (PLAN_AZURE_DATA, default /work/shared/data; skipped without them), Mistral-7B at 20
// requests/s, over end-to-end SLOs: saving_% = 1 − mixed/single.
func BenchmarkCostAzure(b *testing.B) {
	dir := os.Getenv("PLAN_AZURE_DATA")
	if dir == "" {
		dir = "/work/shared/data"
	}
	profs, c := mixedProfiles(b, "mistral-7b")
	for _, trace := range []string{"conv", "code"} {
		for _, slo := range []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 60 * time.Second} {
			b.Run(fmt.Sprintf("%s/slo=%s", trace, slo), func(b *testing.B) {
				bk := azureBuckets(b, filepath.Join(dir, "azure-llm-2023-"+trace+".csv"), "mistral-7b", 20, slo)
				var res *CostResult
				var err error
				for range b.N {
					res, err = SizeBuckets(context.Background(), profs, c, bk, CostSLOFraction, time.Minute, 1e-4)
				}
				if err != nil {
					b.Skipf("%v", err)
				}
				single, typ := CheapestSingleType(context.Background(), profs, c, bk, CostSLOFraction)
				mix := map[string]int{}
				for _, in := range res.Instances {
					mix[in.GPU] += in.GPUCount
				}
				b.ReportMetric(res.Cost, "mixed_$/h")
				b.ReportMetric(single, "single_$/h")
				b.ReportMetric(100*(1-res.Cost/single), "saving_%")
				b.Logf("%s slo %s: mixed %.2f $/h %v, cheapest single %s %.2f $/h, saving %.1f%%", trace, slo, res.Cost, mix, typ, single, 100*(1-res.Cost/single))
			})
		}
	}
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }
