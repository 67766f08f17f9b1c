package gpucat

import (
	"strings"
	"testing"
)

// TestCatalogue: the types in order, every entry complete and consistent (Check), names
// unique across the catalogue, its named types and aliases.
func TestCatalogue(t *testing.T) {
	want := []string{"P4", "T4", "L4", "A10", "V100", "L40S", "A100", "H100", "H200", "B200"}
	if got := strings.Join(Names(), ","); got != strings.Join(want, ",") {
		t.Fatalf("Names() = %s", got)
	}
	for _, s := range All() {
		if err := s.Check(); err != nil {
			t.Error(err)
		}
	}
	seen := map[string]bool{}
	for _, n := range AllNames() {
		if seen[strings.ToLower(n)] {
			t.Errorf("name %s twice", n)
		}
		seen[strings.ToLower(n)] = true
	}
	for a, to := range aliases {
		if _, ok := Find(to); !ok {
			t.Errorf("alias %s of %s, which is not in the catalogue", a, to)
		}
	}
}

// TestMemory pins each type's memory (the figure vLLM's KV budget starts from and the
// planners place models in) and the vLLM batch defaults it decides.
func TestMemory(t *testing.T) {
	cases := []struct {
		gpu   string
		bytes int64
		large bool
	}{
		{"P4", 8 << 30, false}, {"T4", 16 << 30, false}, {"L4", 24 << 30, false}, {"A10", 24 << 30, false},
		{"V100", 16 << 30, false}, {"L40S", 48e9, false}, {"A100", 80 << 30, false},
		{"H100", 80 << 30, true}, {"H200", 141 << 30, true}, {"B200", 180 << 30, true},
	}
	for _, c := range cases {
		s, err := Lookup(c.gpu)
		if err != nil || s.MemoryBytes != c.bytes || LargeEngine(c.gpu) != c.large {
			t.Errorf("%s: memory %d, large %v (%v); want %d, %v", c.gpu, s.MemoryBytes, LargeEngine(c.gpu), err, c.bytes, c.large)
		}
	}
	// Names outside the catalogue: vLLM's rule by the name they contain.
	for name, want := range map[string]bool{"H100-PCIe": true, "gh200": true, "MI300X": true, "A100-80GB": false, "X9": false} {
		if LargeEngine(name) != want {
			t.Errorf("LargeEngine(%s) = %v", name, !want)
		}
	}
}

func TestLookupAndPeaks(t *testing.T) {
	l4, err := Lookup("l4")
	if err != nil || l4.PeakTFLOPS(l4.DefaultPrecision()) != 60 {
		t.Errorf("L4 TF32 peak: %v %v", l4.PeakTFLOPS(TF32), err)
	}
	p4, _ := Lookup("P4")
	if p4.DefaultPrecision() != FP32 || p4.PeakTFLOPS(TF32) != 5.5 || p4.PeakTFLOPS(FP16) != 0.09 {
		t.Errorf("P4 falls back to FP32: %v", p4.PeakTFLOPS(TF32))
	}
	if _, err := Lookup("K80"); err == nil || !strings.Contains(err.Error(), "H100") {
		t.Errorf("unknown GPU: %v", err)
	}
	for in, want := range map[string]string{"a10g": "A10", "h200": "H200", "a800": "A800", "K80": ""} {
		if got := Canonical(in); got != want {
			t.Errorf("Canonical(%s) = %q, want %q", in, got, want)
		}
	}
	if p, ok := Product("2080Ti"); !ok || p != "NVIDIA GeForce RTX 2080 Ti" {
		t.Errorf("2080Ti product %q %v", p, ok)
	}
	if _, ok := Product("A30"); ok {
		t.Error("A30 has no product name in the catalogue")
	}
}

// TestCheckCatches: each way an entry can be incomplete or disagree with itself is an error
// naming the type, the field and the value.
func TestCheckCatches(t *testing.T) {
	h100, _ := Lookup("H100")
	cases := []struct {
		name string
		edit func(*Spec)
		want string
	}{
		{"memory against the product name", func(s *Spec) { s.MemoryBytes = 80e9 }, `memory_bytes: 80000000000: the product "NVIDIA H100 80GB HBM3" states 80 GB`},
		{"no bandwidth", func(s *Spec) { s.MemBWGBps = 0 }, "mem_bw_gbps: 0: must be > 0"},
		{"FP4 on Hopper", func(s *Spec) { s.FP4TFLOPS = 1 }, "fp4_tflops: 1: hopper has FP4 tensor cores: false"},
		{"no FP8 on Hopper", func(s *Spec) { s.FP8TFLOPS = 0 }, "fp8_tflops: 0: hopper has FP8 tensor cores: true"},
		{"no product", func(s *Spec) { s.Product = "" }, "product"},
		{"price without source", func(s *Spec) { s.Price = &Price{USDPerGPUHour: 2, Offer: "x", Date: "2026-01"} }, "must name its offer, its source"},
		{"price month", func(s *Spec) { s.Price = &Price{2, "x", "y", "2026-13"} }, "YYYY-MM"},
		{"stand-in of another architecture", func(s *Spec) { s.Name, s.KernelTable, s.StandIn, s.NearestMeasured = "H100b", "", "", "A100" }, `nearest_measured: "A100": must be of its architecture hopper`},
		{"unmeasured stand-in", func(s *Spec) { s.StandIn = "T4" }, `stand_in: "T4"`},
		{"class", func(s *Spec) { s.Class = "mid" }, "class: mid"},
	}
	for _, c := range cases {
		s := h100
		c.edit(&s)
		err := s.Check()
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "GPU "+s.Name) {
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
	}
}

func TestRegister(t *testing.T) {
	h100, _ := Lookup("H100")
	if _, err := Register(h100); err == nil || !strings.Contains(err.Error(), "already") {
		t.Errorf("registering H100 again: %v", err)
	}
	bad := h100
	bad.Name, bad.MemBWGBps = "Z1", 0
	if _, err := Register(bad); err == nil {
		t.Error("an incomplete type was registered")
	}
	z := h100
	z.Name, z.Product, z.KernelTable, z.StandIn = "Z1", "NVIDIA Z1", "", ""
	remove, err := Register(z)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := Find("Z1"); !ok || Canonical("z1") != "Z1" || !LargeEngine("Z1") {
		t.Error("Z1 not found after Register")
	}
	remove()
	if _, ok := Find("Z1"); ok {
		t.Error("Z1 still there after remove")
	}
}

// TestLookupNames: a type is found by its name, an alias, or the product name the driver
// reports (as nvidia-smi prints it, with or without its prefix and separators); a name
// that only contains a type's name is another part of the family and is refused naming
// the type the catalogue holds; anything else is unknown.
func TestLookupNames(t *testing.T) {
	for _, c := range []struct{ name, want, err string }{
		{"h100", "H100", ""},
		{"NVIDIA H100 80GB HBM3", "H100", ""},
		{"H100-80GB-HBM3", "H100", ""},
		{"NVIDIA A100-SXM4-80GB", "A100", ""},
		{"a100 sxm4 80gb", "A100", ""},
		{"Tesla T4", "T4", ""},
		{"NVIDIA L40S", "L40S", ""},
		{"A10G", "A10", ""},
		{"NVIDIA A10G", "A10", ""},
		{"A100-40GB", "", `GPU "A100-40GB": not the catalogue's A100, which is the NVIDIA A100-SXM4-80GB (80 GB, 2039 GB/s): give A100 if it is that GPU`},
		{"NVIDIA H100 PCIe", "", `GPU "NVIDIA H100 PCIe": not the catalogue's H100`},
		{"L40S-48GB", "", `not the catalogue's L40S`},
		{"K80", "", `GPU "K80": unknown; known GPUs: `},
		{"", "", `GPU "": unknown`},
		{"NVIDIA", "", `GPU "NVIDIA": unknown`},
	} {
		s, err := Lookup(c.name)
		switch {
		case c.err == "" && (err != nil || s.Name != c.want):
			t.Errorf("Lookup(%q) = %s, %v; want %s", c.name, s.Name, err, c.want)
		case c.err != "" && (err == nil || !strings.HasPrefix(err.Error(), c.err) && !strings.Contains(err.Error(), c.err)):
			t.Errorf("Lookup(%q): error %v, want %q", c.name, err, c.err)
		}
	}
}
