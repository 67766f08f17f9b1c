//go:build cgo

package serve

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
	"github.com/plan-dev/plan/internal/fixture/servetest"
	"github.com/plan-dev/plan/profiler/measure"
	"github.com/plan-dev/plan/profiler/onnx"
	"github.com/plan-dev/plan/profiler/onnx/onnxtest"
	"github.com/plan-dev/plan/serve/kserve"
	"github.com/plan-dev/plan/serve/worker"
)

func needORT(t *testing.T) {
	t.Helper()
	if err := measure.LibraryAvailable(); err != nil {
		if os.Getenv("PLAN_REQUIRE_ALL") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// twoPartitionPlan cuts a model of n nodes at node cut into two blocks and plans one
// pipeline of two stages (one L4 each) at batch size batch.
func twoPartitionPlan(model string, n, cut, batch int) *formats.Plan {
	tm := func(kind string) formats.TypeMeta {
		return formats.TypeMeta{APIVersion: formats.APIVersion, Kind: kind}
	}
	var lat []formats.LatencyEntry
	for b := 1; b <= batch; b++ {
		lat = append(lat, formats.LatencyEntry{GPU: "L4", VGPU: 1, Batch: b, BlockUs: []float64{1000, 1000}})
	}
	prof := formats.Profile{TypeMeta: tm("Profile"), Models: []formats.ModelProfile{{
		Name: model, Backend: "onnx", Blocks: []formats.Block{{FirstLayer: 0, EndLayer: cut}, {FirstLayer: cut, EndLayer: n}},
		CutBytes: []int64{4096}, Latency: lat,
	}}}
	cl := &formats.Cluster{TypeMeta: tm("Cluster"), GPUs: []formats.GPUPool{{Type: "L4", Count: 2, PerServer: 1, VGPU: []int{1}, Class: "high"}}, NICGbps: 10}
	return ppipesec.SetPlan(&formats.Plan{
		TypeMeta: tm("Plan"), Metadata: formats.Metadata{Name: "two-partitions"},
		Provenance: formats.Provenance{Tool: "test", Embedded: &formats.EmbeddedInputs{Profiles: []formats.Profile{prof}, Cluster: cl}},
		Cluster:    cl,
	}, &ppipesec.PPipePlan{Strategy: "ppipe", Models: []ppipesec.PPipeModelPlan{{
		Model: model, SLO: formats.Duration(1e9), Weight: 1, ThroughputRPS: 100,
		Pipelines: []ppipesec.PPipePipeline{{Batch: batch, ThroughputRPS: 100, Partitions: []ppipesec.Partition{
			{FirstBlock: 0, EndBlock: 1, GPU: "L4", VGPU: 1, Count: 1, StageLatencyUs: 1000, TransferUs: 100},
			{FirstBlock: 1, EndBlock: 2, GPU: "L4", VGPU: 1, Count: 1, StageLatencyUs: 1000},
		}}},
	}}})
}

// TestONNXWorkers serves a generated CNN cut into two partitions (the cut crosses the
// residual connection, so a tensor passes through) and checks every answer against the
// unpartitioned model run as one session: equal within the fp16 rounding of the feature maps.
func TestONNXWorkers(t *testing.T) {
	needORT(t)
	data, err := onnx.Build(onnxtest.CNN(4, 16), 1)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cnn.onnx")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := onnx.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Graph(nil); err != nil {
		t.Fatal(err)
	}
	n := len(m.Nodes)
	inName, outName := m.Inputs[0].Name, m.Outputs[0].Name
	full, err := measure.NewSession("full model", data, []string{inName}, []string{outName}, "cpu", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()

	// The cut with the most tensors crossing it (a skip connection passing through), and the
	// middle of the model.
	widest, most := 1, 0
	for c := 1; c < n; c++ {
		if ins, _, err := onnx.BlockIO(m, c, n); err == nil && len(ins) > most {
			widest, most = c, len(ins)
		}
	}
	for _, cut := range []int{widest, n / 2} {
		t.Run(fmt.Sprintf("cut at node %d of %d", cut, n), func(t *testing.T) {
			ins, _, err := onnx.BlockIO(m, cut, n)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("tensors crossing the cut: %v", ins)
			plan := twoPartitionPlan("cnn", n, cut, 2)
			_, ts := testServer(t, Options{Plan: plan, NewExecutor: worker.ONNXFactory(worker.ONNXOptions{Model: path, Device: "cpu", Threads: 1, Cuts: servetest.ONNXCuts})})
			code, body := get(t, ts.URL+"/v2/models/cnn")
			if code != 200 || !strings.Contains(string(body), `"shape":[-1,3,16,16]`) {
				t.Fatalf("metadata: %d %s", code, body)
			}
			const reqs = 4
			var wg sync.WaitGroup
			for i := 0; i < reqs; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(i), 9))
					x := make([]float32, 3*16*16)
					for j := range x {
						x[j] = float32(rng.NormFloat64())
					}
					in := kserve.Float32Tensor(inName, []int64{1, 3, 16, 16}, x)
					b, _ := json.Marshal(kserve.InferRequest{Inputs: []kserve.TensorJSON{in}})
					code, _, body := post(t, ts.URL+"/v2/models/cnn/infer", string(b))
					if code != 200 {
						t.Errorf("request %d: %d %s", i, code, body)
						return
					}
					var r kserve.InferResponse
					if err := json.Unmarshal(body, &r); err != nil {
						t.Error(err)
						return
					}
					got, err := r.Outputs[0].Float32s()
					if err != nil {
						t.Error(err)
						return
					}
					want, err := full.Run([]measure.FloatTensor{{Shape: []int64{1, 3, 16, 16}, Data: x}})
					if err != nil {
						t.Error(err)
						return
					}
					if r.Outputs[0].Name != outName || len(got) != len(want[0].Data) {
						t.Errorf("request %d: output %s with %d values, want %s with %d", i, r.Outputs[0].Name, len(got), outName, len(want[0].Data))
						return
					}
					var worst float64
					for j := range got {
						d := math.Abs(float64(got[j] - want[0].Data[j]))
						// fp16 keeps 11 significant bits: a relative error of ~1e-3 per
						// rounding, amplified a little by the layers after the cut.
						if tol := 1e-2 + 1e-2*math.Abs(float64(want[0].Data[j])); d > tol {
							t.Errorf("request %d: output[%d] = %g, unpartitioned %g", i, j, got[j], want[0].Data[j])
							return
						}
						worst = max(worst, d)
					}
					if len(r.Timing.Stages) != 2 {
						t.Errorf("request %d: %d stages in the timing", i, len(r.Timing.Stages))
					}
					t.Logf("request %d: batch %d, max abs difference %.2g", i, r.Timing.Stages[0].Batch, worst)
				}()
			}
			wg.Wait()
		})
	}
}

func TestONNXBadModel(t *testing.T) {
	needORT(t)
	data, err := onnx.Build(onnxtest.MLP(8, 16, 4), 1)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mlp.onnx")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// A profile with more layers than the model has nodes was made from another model.
	plan := twoPartitionPlan("mlp", 99, 2, 1)
	_, err = New(withSystems(Options{Plan: plan, NewExecutor: worker.ONNXFactory(worker.ONNXOptions{Model: path, Device: "cpu", Cuts: servetest.ONNXCuts})}))
	if err == nil || !strings.Contains(err.Error(), "has 99 layers") {
		t.Errorf("error %v", err)
	}
	_, err = New(withSystems(Options{Plan: plan, NewExecutor: worker.ONNXFactory(worker.ONNXOptions{Model: filepath.Join(t.TempDir(), "none.onnx"), Device: "cpu", Cuts: servetest.ONNXCuts})}))
	if err == nil || !strings.Contains(err.Error(), "none.onnx") {
		t.Errorf("error %v", err)
	}
}
