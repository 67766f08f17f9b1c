package profiler

import (
	"reflect"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/onformats/demo"
	"github.com/plan-dev/plan/profiler/roofline"
)

func TestClusterGrid(t *testing.T) {
	c := &formats.Cluster{GPUs: []formats.GPUPool{
		{Type: "L4", Count: 2, VGPU: []int{1, 2}},
		{Type: "p4", Count: 4, VGPU: []int{1, 2}}, // P4 runs whole GPUs only
		{Type: "V100", Count: 1},                  // no levels = whole GPUs
	}}
	names, grid, err := ClusterGrid(c)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(names, []string{"L4", "P4", "V100"}) {
		t.Fatalf("names %v", names)
	}
	if len(grid["L4"]) != 8+4 || len(grid["P4"]) != 8 || len(grid["V100"]) != 8 {
		t.Fatalf("grid sizes L4 %d P4 %d V100 %d", len(grid["L4"]), len(grid["P4"]), len(grid["V100"]))
	}
	if grid["L4"][11] != (roofline.Point{VGPU: 2, Batch: 4}) {
		t.Errorf("last L4 point %v", grid["L4"][11])
	}
	c.GPUs = append(c.GPUs, formats.GPUPool{Type: "MI300", Count: 1})
	if _, _, err := ClusterGrid(c); err == nil {
		t.Error("unknown GPU type: want an error")
	}
}

func TestDemoProfileDeterministic(t *testing.T) {
	c, err := demo.Cluster()
	if err != nil {
		t.Fatal(err)
	}
	a, err := DemoProfile(c)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := DemoProfile(c)
	da, _ := formats.Digest(a)
	db, _ := formats.Digest(b)
	if da != db {
		t.Fatal("two demo profiles differ")
	}
	if errs := a.Validate(); len(errs) > 0 {
		t.Fatal(errs)
	}
}

// BenchmarkDemoProfile is the analytic part of `plan profile` with no model.
func BenchmarkDemoProfile(b *testing.B) {
	c, err := demo.Cluster()
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		if _, err := DemoProfile(c); err != nil {
			b.Fatal(err)
		}
	}
}
