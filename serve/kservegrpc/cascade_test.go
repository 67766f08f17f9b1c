package kservegrpc

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/serve"
	pb "github.com/plan-dev/plan/serve/kservegrpc/inferencepb"
)

// TestCascadeAnsweredBy: over gRPC too, a cascade's answer says which model answered. The
// tiny cascade (testdata/cascade/onnx) served with emulated workers replays its validation
// records: the first request is sample 0, which mlp-m answers with certainty 0.863351, above
// the plan's 0.835 threshold, so it leaves at the first stage.
func TestCascadeAnsweredBy(t *testing.T) {
	p, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "..", "testdata", "cascade", "onnx", "plan.json"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	if g := cascadesec.PlanOf(p).Gears[0]; len(g.Models) < 2 || g.Models[0] != "mlp-m" || !(g.Thr[0] <= 0.863351) {
		t.Fatalf("the tiny plan's first gear is %v %v: this test expects mlp-m first with a threshold ≤ 0.863351", g.Models, g.Thr)
	}
	_, c, _ := start(t, serve.Options{Plan: p})
	x := make([]float32, 32)
	r, err := c.ModelInfer(context.Background(), &pb.ModelInferRequest{ModelName: "tiny",
		Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "input", Datatype: "FP32", Shape: []int64{1, 32}, Contents: &pb.InferTensorContents{Fp32Contents: x}}}})
	if err != nil {
		t.Fatal(err)
	}
	ps := r.Parameters
	if ps["answered_by"].GetStringParam() != "mlp-m" || ps["hops"].GetInt64Param() != 1 || ps["certainty"].GetStringParam() != "0.863351" {
		t.Errorf("parameters %v: want answered_by mlp-m after 1 hop with certainty 0.863351", ps)
	}
}
