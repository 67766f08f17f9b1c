package dyorc

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	dp "github.com/plan-dev/plan/dataplane/dyorc"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
)

// TestCapacity: the capacity of testdata/dyorc/small.json's plan grows with the
// GPUs its placement is solved on, keeps the workload's mix (both apps scale alike while the
// pooled bound holds), and follows the model's formula U·(G − G₀)/W; a plan missing what the
// model needs is an error naming it.
func TestCapacity(t *testing.T) {
	wl := load(t, "small.json").(*formats.Workload)
	base := load(t, "cluster.json").(*formats.Cluster)
	// W: the small workload's GPU-seconds per second at its rates.
	w, err := dp.Compile(dyorcsec.WorkflowsOf(wl))
	if err != nil {
		t.Fatal(err)
	}
	gillRate, imageRate := dyorcsec.WorkflowsOf(wl).Apps["gill"].RateRPS, dyorcsec.WorkflowsOf(wl).Apps["image"].RateRPS
	var work float64
	for _, l := range Load(w) {
		work += l
	}
	prev := 0.0
	for _, gpus := range []int{2, 4, 8, 16} {
		cl := *base
		cl.GPUs = append([]formats.GPUPool(nil), base.GPUs...)
		cl.GPUs[0].Count, cl.GPUs[0].PerServer = gpus, gpus
		p, err := Solve(context.Background(), wl, &cl, nil, Options{TimeLimit: 20 * time.Second, Deterministic: true})
		if err != nil {
			t.Fatal(err)
		}
		c, err := Capacity(p)
		if err != nil {
			t.Fatal(err)
		}
		want := gillRate * CapacityUtilization * (float64(gpus) - CapacityReserveGPUs) / work
		t.Logf("%d GPUs: %v (pooled gill %.3f)", gpus, c, want)
		if c["gill"] <= prev {
			t.Errorf("%d GPUs: gill capacity %.3f does not grow (%.3f on fewer)", gpus, c["gill"], prev)
		}
		if c["gill"] > want*(1+1e-9) {
			t.Errorf("%d GPUs: gill capacity %.3f above the pooled bound %.3f", gpus, c["gill"], want)
		}
		if gpus <= 8 && (math.Abs(c["gill"]-want) > 1e-9 || math.Abs(c["image"]-imageRate/gillRate*want) > 1e-9) {
			t.Errorf("%d GPUs: capacity %v, want the pooled gill %.4f and image %.4f", gpus, c, want, imageRate/gillRate*want)
		}
		prev = c["gill"]
	}
	// One GPU holds every service, 15 more hold llm7b alone: sd15's single replica bounds
	// gill (U·1/load of sd15), cap's bounds image; the pooled bound is far above both.
	var place []dyorcsec.GPUServices
	place = append(place, dyorcsec.GPUServices{GPU: 0, Services: []string{"vit", "llm7b", "sd15", "det", "ocr", "cap", "upscale"}})
	for g := 1; g < 16; g++ {
		place = append(place, dyorcsec.GPUServices{GPU: g, Services: []string{"llm7b"}})
	}
	one := dyorcsec.SetPlan(&formats.Plan{Cluster: base, Provenance: formats.Provenance{Embedded: &formats.EmbeddedInputs{Workload: wl}}}, &dyorcsec.DyOrcPlan{Placement: place})
	c, err := Capacity(one)
	if err != nil {
		t.Fatal(err)
	}
	l := Load(w)
	if want := gillRate * CapacityUtilization / l[w.SvcIndex["sd15"]]; math.Abs(c["gill"]-want) > 1e-9 {
		t.Errorf("one sd15 replica: gill capacity %.4f, want %.4f", c["gill"], want)
	}
	if want := imageRate * CapacityUtilization / l[w.SvcIndex["cap"]]; math.Abs(c["image"]-want) > 1e-9 {
		t.Errorf("one cap replica: image capacity %.4f, want %.4f", c["image"], want)
	}
	cases := []struct {
		name string
		p    *formats.Plan
		want string
	}{
		{"no section", &formats.Plan{}, "no dyorc section"},
		{"no inputs", dyorcsec.SetPlan(&formats.Plan{}, &dyorcsec.DyOrcPlan{}), "provenance.embedded holds no workload"},
		{"service unplaced", dyorcsec.SetPlan(&formats.Plan{Cluster: base, Provenance: formats.Provenance{Embedded: &formats.EmbeddedInputs{Workload: wl}}},
			&dyorcsec.DyOrcPlan{Placement: []dyorcsec.GPUServices{{GPU: 0, Services: []string{"vit", "llm7b", "det", "ocr", "cap", "upscale"}}}}), "service sd15 is placed on no GPU"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Capacity(tc.p); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
