package trt

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/plan-dev/plan/profiler/graph"
)

func read(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseProfileExact(t *testing.T) {
	p, err := ParseProfile(read(t, "profile.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := &Profile{Count: 412, Layers: []LayerTime{
		{"conv1 + relu1", 61.8, 0.15, 0.148, 30},
		{"pool1", 16.48, 0.04, 0.04, 8},
		{"conv2 + relu2", 41.2, 0.1, 0.101, 20},
		{"conv3 + add1 + relu3", 49.44, 0.12, 0.12, 24},
		{"Reformatting CopyNode for Input Tensor 0 to gap", 8.24, 0.02, 0.02, 4},
		{"gap", 12.36, 0.03, 0.03, 6},
		{"fc", 16.48, 0.04, 0.039, 8},
	}}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("got %+v\nwant %+v", p, want)
	}
	if us := p.Layers[0].Us(); us != 148 {
		t.Errorf("median µs = %v, want 148", us)
	}
	if us := (LayerTime{AverageMs: 0.5}).Us(); us != 500 {
		t.Errorf("no median: %v µs, want the average 500", us)
	}
}

func TestParseLayerInfoExact(t *testing.T) {
	info, err := ParseLayerInfo(read(t, "layers.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !info.Detailed || len(info.Layers) != 8 || !reflect.DeepEqual(info.Bindings, []string{"input", "output"}) {
		t.Fatalf("info: detailed %v, %d layers, bindings %v", info.Detailed, len(info.Layers), info.Bindings)
	}
	l := info.Layers[3]
	want := LayerInfo{Name: "conv3 + add1 + relu3", LayerType: "CaskConvolution",
		Inputs: []Tensor{
			{"relu2_out", []int64{1, 64, 56, 56}, "Channel major FP16 format where channel % 8 == 0"},
			{"pool1_out", []int64{1, 64, 56, 56}, "Channel major FP16 format where channel % 8 == 0"},
		},
		Outputs: []Tensor{{"relu3_out", []int64{1, 64, 56, 56}, "Channel major FP16 format where channel % 8 == 0"}},
	}
	if !reflect.DeepEqual(l, want) {
		t.Fatalf("layer 3: got %+v\nwant %+v", l, want)
	}
	names, err := ParseLayerInfo(read(t, "layers_names.json"))
	if err != nil {
		t.Fatal(err)
	}
	if names.Detailed || len(names.Layers) != 7 || names.Layers[6].Name != "fc" {
		t.Fatalf("names-only: %+v", names)
	}
}

func TestImport(t *testing.T) {
	mp, err := Import(read(t, "profile.json"), read(t, "layers.json"), ImportOptions{Name: "tiny", GPU: "L4", Batch: 1, Blocks: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(mp.Layers) != 8 || mp.Layers[5].LatencyUs["L4"] != 0 || mp.Layers[0].LatencyUs["L4"] != 148 {
		t.Fatalf("layers: %+v", mp.Layers)
	}
	if len(mp.Blocks) != 3 || len(mp.CutBytes) != 2 || len(mp.Latency) != 1 {
		t.Fatalf("blocks %v cuts %v", mp.Blocks, mp.CutBytes)
	}
	e := mp.Latency[0]
	if e.TotalUs != 498 || e.WholeUs() != 498 {
		t.Errorf("total %v, block sum %v, want 498", e.TotalUs, e.WholeUs())
	}
	if !reflect.DeepEqual(mp.InputShape, []int64{3, 224, 224}) {
		t.Errorf("input shape %v", mp.InputShape)
	}
	// Hand-computed cut sizes: before conv3 both relu2_out and the skip pool1_out (fp16,
	// 64·56·56·2 B each) are live; after the reformat the FP32 tensor counts 2 B per element.
	layers, _ := Merge(mustProfile(t), mustInfo(t))
	g, err := Graph("tiny", layers, 1)
	if err != nil {
		t.Fatal(err)
	}
	cuts := graph.AllCutBytes(g)
	fm := int64(64 * 56 * 56 * 2)
	want := []int64{3 * 224 * 224 * 2, 64 * 112 * 112 * 2, fm, 2 * fm, fm, fm, fm, 64 * 2, 1000 * 2}
	if !reflect.DeepEqual(cuts, want) {
		t.Fatalf("cuts %v, want %v", cuts, want)
	}
	// Names-only layer info: no shapes, so cut sizes are unknown (0).
	mp2, err := Import(read(t, "profile.json"), read(t, "layers_names.json"), ImportOptions{Name: "tiny", GPU: "L4", Blocks: 2, Method: "greedy"})
	if err != nil {
		t.Fatal(err)
	}
	if len(mp2.Layers) != 7 || mp2.CutBytes[0] != 0 {
		t.Fatalf("names-only import: %+v", mp2)
	}
}

func mustProfile(t *testing.T) *Profile {
	p, err := ParseProfile(read(t, "profile.json"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustInfo(t *testing.T) *Info {
	i, err := ParseLayerInfo(read(t, "layers.json"))
	if err != nil {
		t.Fatal(err)
	}
	return i
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, profile, want string }{
		{"not array", `{"count": 1}`, "not a JSON array"},
		{"empty", `[]`, "empty array"},
		{"no count", `[{"name":"a"}]`, `must be {"count": N}`},
		{"no layers", `[{"count":3}]`, "no layers"},
		{"negative", `[{"count":3},{"name":"a","averageMs":-1}]`, "finite"},
		{"unknown field", `[{"count":3},{"name":"a","bogus":1}]`, "unknown field"},
		{"duplicate", `[{"count":3},{"name":"a"},{"name":"a"}]`, "duplicate"},
	} {
		if _, err := ParseProfile([]byte(tc.profile)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
	for _, tc := range []struct{ name, info, want string }{
		{"no layers", `{"Layers": []}`, "at least one layer"},
		{"dynamic", `{"Layers": [{"Name":"a","Inputs":[{"Name":"x","Dimensions":[-1,3]}]}]}`, "fixed shape"},
		{"garbage", `[1,2]`, "layer info"},
	} {
		if _, err := ParseLayerInfo([]byte(tc.info)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
	p := mustProfile(t)
	p.Layers = append(p.Layers, LayerTime{Name: "ghost"})
	if _, err := Merge(p, mustInfo(t)); err == nil || !strings.Contains(err.Error(), "ghost") {
		t.Errorf("profile layer missing from layer info: %v", err)
	}
}

func FuzzParseProfile(f *testing.F) {
	f.Add(read(f, "profile.json"))
	f.Add([]byte(`[{"count":1},{"name":"x","averageMs":1}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseProfile(data)
		if err != nil {
			return
		}
		if len(p.Layers) == 0 {
			t.Fatal("accepted a profile without layers")
		}
		for _, l := range p.Layers {
			if l.Name == "" || l.Us() < 0 {
				t.Fatalf("accepted bad layer %+v", l)
			}
		}
	})
}

func FuzzParseLayerInfo(f *testing.F) {
	f.Add(read(f, "layers.json"))
	f.Add(read(f, "layers_names.json"))
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := ParseLayerInfo(data)
		if err != nil {
			return
		}
		if len(info.Layers) == 0 {
			t.Fatal("accepted layer info without layers")
		}
		// Whatever parses must either build a valid graph or fail cleanly.
		layers := make([]Layer, len(info.Layers))
		for i := range info.Layers {
			layers[i] = Layer{Name: info.Layers[i].Name, Info: &info.Layers[i]}
		}
		if g, err := Graph("fuzz", layers, 1); err == nil {
			graph.AllCutBytes(g)
		}
	})
}

func TestDType(t *testing.T) {
	for in, want := range map[string]string{
		"Row major linear FP32":                            "float32",
		"Channel major FP16 format where channel % 8 == 0": "float16",
		"Row major linear Half":                            "float16",
		"Row major Int8 format":                            "int8",
		"Row major linear Int32":                           "int32",
		"Row major linear INT64":                           "int64",
		"Row major linear Bool":                            "bool",
		"":                                                 "float32",
	} {
		if got := DType(in); got != want {
			t.Errorf("DType(%q) = %s, want %s", in, got, want)
		}
	}
}
