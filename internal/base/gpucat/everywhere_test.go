package gpucat_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/plan-dev/plan/export"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/base/gpucat"
	"github.com/plan-dev/plan/profiler/kerneltab"
	"github.com/plan-dev/plan/profiler/llm"
	"github.com/plan-dev/plan/profiler/measure"
	"github.com/plan-dev/plan/profiler/roofline"
)

// TestNewTypeIsOneEntry registers a test-only GPU type, a Hopper part without kernel
// tables, in the catalogue alone, and finds it everywhere a GPU type is read: cluster
// validation (no memory_bytes needed), the default price, the node labels, the roofline
// (its architecture's fitted constants), the kernel tables' fallback (estimated, not
// measured), vLLM's batch defaults and the KV budget, the device-name scan. Before it is
// registered, each of them refuses or misses it.
func TestNewTypeIsOneEntry(t *testing.T) {
	h100, err := gpucat.Lookup("H100")
	if err != nil {
		t.Fatal(err)
	}
	x := h100
	x.Name, x.Product, x.KernelTable, x.StandIn = "X7", "NVIDIA X7 96GB", "", ""
	x.MemoryBytes, x.MemBWGBps = 96<<30, 4000
	x.Price = &gpucat.Price{USDPerGPUHour: 4.25, Offer: "test offer", Source: "test source", Date: "2026-11"}
	cluster := &formats.Cluster{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindCluster},
		GPUs: []formats.GPUPool{{Type: "X7", Count: 2, PerServer: 2}}, NICGbps: 100}

	// Unknown before.
	if errs := cluster.Validate(); !strings.Contains(errs.Error(), "unknown GPU type") {
		t.Fatalf("X7 before registering: %v", errs)
	}
	if _, ok := export.GPUProduct("X7"); ok {
		t.Fatal("X7 has a label before registering")
	}

	remove, err := gpucat.Register(x)
	if err != nil {
		t.Fatal(err)
	}
	defer remove()

	if errs := cluster.Validate(); len(errs) > 0 {
		t.Errorf("cluster of X7: %v", errs)
	}
	if m := formats.KnownGPUMemory("X7"); m != 96<<30 {
		t.Errorf("cluster memory of X7: %d", m)
	}
	if p, def, err := cluster.Price("X7"); err != nil || !def || p != 4.25 {
		t.Errorf("price of X7: %g %v %v", p, def, err)
	}
	if note := formats.DefaultPriceNote([]string{"X7"}); !strings.Contains(note, "X7 4.25 (test offer; test source, 2026-11)") {
		t.Errorf("price note: %s", note)
	}
	if p, ok := export.GPUProduct("X7"); !ok || p != "NVIDIA-X7-96GB" {
		t.Errorf("node label of X7: %q %v", p, ok)
	}
	if r, ok := export.RayAccelerator("X7"); !ok || r != "X7" {
		t.Errorf("Ray accelerator of X7: %q %v", r, ok)
	}
	if !strings.Contains(strings.Join(export.KnownGPULabels(), ","), "X7") {
		t.Error("X7 not among the known labels")
	}
	if _, err := roofline.NewEstimator("X7", gpucat.TF32); err != nil {
		t.Errorf("roofline of X7: %v", err)
	}
	// The roofline borrows the fit of the catalogue entry's nearest measured GPU: the
	// H100's for this Hopper part, the B200's for a Blackwell one.
	if got := roofline.KernelParamsFor(x); got == roofline.DefaultKernelParams() || roofline.NearestMeasured(x, "") != "H100" {
		t.Errorf("X7's kernel constants %+v, nearest %s: want the H100's fit", got, roofline.NearestMeasured(x, ""))
	}
	bw := x
	bw.Arch, bw.FP4TFLOPS, bw.NearestMeasured = "blackwell", 9000, "B200"
	if got, want := roofline.KernelParamsFor(bw), roofline.KernelParamsFor(mustLookup(t, "B200")); got != want {
		t.Errorf("a Blackwell X7's kernel constants %+v; want the B200's %+v", got, want)
	}
	if _, err := kerneltab.Load("X7"); kerneltab.Has("X7") || !errors.Is(err, kerneltab.ErrNoTables) {
		t.Errorf("X7 has no kernel tables: Has %v, Load %v", kerneltab.Has("X7"), err)
	}
	p, err := llm.Estimate("llama-3.1-8b", "X7")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p.StepTimes, "estimated: roofline with H100's fitted constants") || p.KVCapacityTokens <= 0 {
		t.Errorf("X7 profile: step times %q, KV %d", p.StepTimes, p.KVCapacityTokens)
	}
	if b, s := formats.DefaultBatchedTokens("X7"); b != 8192 || s != 1024 {
		t.Errorf("vLLM defaults on X7 (96 GiB): %d, %d", b, s)
	}
	if got := measure.GPUType("NVIDIA X7 96GB"); got != "X7" {
		t.Errorf("device name scan: %q", got)
	}
}

func mustLookup(t *testing.T, name string) gpucat.Spec {
	t.Helper()
	s, err := gpucat.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
