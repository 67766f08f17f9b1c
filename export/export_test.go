package export

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func testGroups() []Group {
	pl := func(k string, n, b int) Placement {
		return Placement{Key: k, GPU: "L4", VGPU: 2, Count: n, Batch: b, FirstBlock: 0, EndBlock: 3}
	}
	in := []TritonTensor{{Name: "x", DataType: "TYPE_FP32", Dims: []int64{3, 8}}}
	mid := []TritonTensor{{Name: "h", DataType: "TYPE_FP32", Dims: []int64{16}}}
	out := []TritonTensor{{Name: "y", DataType: "TYPE_FP32", Dims: []int64{10}}}
	return []Group{{Name: "p-m-p0", Chain: true, Units: []Unit{
		{Name: "p-m-p0-s0", Placement: pl("m/p0/s0", 3, 4), QueueDelayUs: 100, TimeoutUs: 5000, Inputs: in, Outputs: mid, Next: []string{"p-m-p0-s1"}},
		{Name: "p-m-p0-s1", Placement: pl("m/p0/s1", 1, 4), QueueDelayUs: 100, TimeoutUs: 5000, Inputs: mid, Outputs: out},
	}}}
}

// TestRenderValidRoundTrip renders each target from groups, validates the files against the
// schemas and reads the placements back.
func TestRenderValidRoundTrip(t *testing.T) {
	o := Options{}.Defaults()
	want := []Placement{testGroups()[0].Units[0].Placement, testGroups()[0].Units[1].Placement}
	for _, tc := range []struct {
		target string
		render func([]Group, Options) (Files, error)
		files  int
	}{{Triton, TritonFiles, 4}, {KServe, KServeFiles, 3}, {Ray, RayFiles, 1}} {
		t.Run(tc.target, func(t *testing.T) {
			f, err := tc.render(testGroups(), o)
			if err != nil {
				t.Fatal(err)
			}
			if len(f) != tc.files {
				t.Errorf("%d files %v, want %d", len(f), f.Names(), tc.files)
			}
			if err := Validate(f); err != nil {
				t.Fatal(err)
			}
			got, err := ReadBack(tc.target, f)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
				t.Errorf("read back %v, want %v", got, want)
			}
		})
	}
}

func TestEnsembleWiring(t *testing.T) {
	f, err := TritonFiles(testGroups(), Options{}.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseTriton(f["p-m-p0/config.pbtxt"])
	if err != nil {
		t.Fatal(err)
	}
	steps := c.GetEnsembleScheduling().GetStep()
	if c.Platform != "ensemble" || len(steps) != 2 || steps[1].InputMap["h"] != steps[0].OutputMap["h"] || c.MaxBatchSize != 4 {
		t.Errorf("ensemble: %v", c)
	}
	g := testGroups()
	g[0].Positional = true
	g[0].Units[1].Inputs = []TritonTensor{{Name: "INPUT0", DataType: "TYPE_FP32", Dims: []int64{-1}}}
	f, _ = TritonFiles(g, Options{}.Defaults())
	c, _ = ParseTriton(f["p-m-p0/config.pbtxt"])
	steps = c.GetEnsembleScheduling().GetStep()
	if len(steps) != 2 || steps[1].InputMap["INPUT0"] != steps[0].OutputMap["h"] {
		t.Errorf("positional ensemble: %v", c)
	}
}

// TestValidateRejectsUnknownFields misspells or invents a field in each kind of file.
func TestValidateRejectsUnknownFields(t *testing.T) {
	o := Options{}.Defaults()
	tri, _ := TritonFiles(testGroups(), o)
	ks, _ := KServeFiles(testGroups(), o)
	ray, _ := RayFiles(testGroups(), o)
	for _, tc := range []struct {
		name, file, from, to string
		files                Files
	}{
		{"triton misspelled", "p-m-p0-s0/config.pbtxt", "max_batch_size", "max_batchsize", tri},
		{"triton bad enum", "p-m-p0-s0/config.pbtxt", "KIND_GPU", "KIND_TPU", tri},
		{"triton unknown block", "p-m-p0-s0/config.pbtxt", "dynamic_batching {", "dynamic_batcher {", tri},
		{"isvc misspelled", "inferenceservice-p-m-p0-s0.yaml", "minReplicas", "minReplica", ks},
		{"isvc nested unknown", "inferenceservice-p-m-p0-s0.yaml", "storageUri", "storageURI", ks},
		{"graph bad router", "inferencegraph-p-m-p0.yaml", "Sequence", "Sequential", ks},
		{"graph misspelled step", "inferencegraph-p-m-p0.yaml", "serviceName", "service_name", ks},
		{"ray misspelled", RayConfigFile, "num_replicas", "replicas", ray},
		{"ray actor option", RayConfigFile, "num_gpus", "gpus", ray},
		{"ray negative", RayConfigFile, "num_gpus: 0.5", "num_gpus: -1", ray},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := Files{}
			for k, v := range tc.files {
				f[k] = v
			}
			if !strings.Contains(string(f[tc.file]), tc.from) {
				t.Fatalf("%s has no %q:\n%s", tc.file, tc.from, f[tc.file])
			}
			f[tc.file] = []byte(strings.Replace(string(f[tc.file]), tc.from, tc.to, 1))
			err := Validate(f)
			if err == nil || !strings.Contains(err.Error(), tc.file) {
				t.Errorf("Validate: %v, want an error naming %s", err, tc.file)
			}
		})
	}
}

func TestWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	f := Files{"a/config.pbtxt": []byte("x"), "b.yaml": []byte("y")}
	if err := Write(dir, f, false); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a", "config.pbtxt")); string(b) != "x" {
		t.Errorf("a/config.pbtxt = %q", b)
	}
	if err := Write(dir, Files{"c.yaml": nil}, false); !errors.Is(err, ErrNotEmpty) {
		t.Errorf("non-empty without force: %v", err)
	}
	if err := Write(dir, Files{"c.yaml": nil}, true); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "c.yaml" {
		t.Errorf("after --force: %v, want only c.yaml", ents)
	}
	if err := Write(dir, Files{"../escape": nil}, true); err == nil {
		t.Error("a path leaving the directory must fail")
	}
	if _, err := os.Stat(filepath.Join(dir, "c.yaml")); err != nil {
		t.Errorf("a failed write must leave the directory as it was: %v", err)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	_ = os.Mkdir(empty, 0o755)
	if err := Write(empty, f, false); err != nil {
		t.Errorf("an existing empty directory needs no --force: %v", err)
	}
	// The root cannot be replaced by a sibling: said as such, not as a temp-name pattern
	// error, and before anything is read or written.
	if err := Write("/", f, true); err == nil || !strings.Contains(err.Error(), "is the filesystem root") {
		t.Errorf("-o /: %v", err)
	}
}

func TestDNSLabel(t *testing.T) {
	for in, want := range map[string]string{"Demo_PPipe": "demo-ppipe", "--a..b--": "a-b", "": "x", strings.Repeat("a", 70): strings.Repeat("a", 63)} {
		if got := DNSLabel(in); got != want {
			t.Errorf("DNSLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzReadBack: the read-back decoders never panic on arbitrary files.
func FuzzReadBack(f *testing.F) {
	o := Options{}.Defaults()
	tri, _ := TritonFiles(testGroups(), o)
	ks, _ := KServeFiles(testGroups(), o)
	ray, _ := RayFiles(testGroups(), o)
	f.Add(string(tri["p-m-p0-s0/config.pbtxt"]), string(ks["inferenceservice-p-m-p0-s0.yaml"]), string(ray[RayConfigFile]))
	f.Fuzz(func(t *testing.T, a, b, c string) {
		_, _ = ReadBack(Triton, Files{"m/config.pbtxt": []byte(a)})
		_, _ = ReadBack(KServe, Files{"x.yaml": []byte(b)})
		_, _ = ReadBack(Ray, Files{RayConfigFile: []byte(c)})
		_ = Validate(Files{"m/config.pbtxt": []byte(a), "x.yaml": []byte(b), RayConfigFile: []byte(c)})
	})
}
