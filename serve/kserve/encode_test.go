package kserve

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestEncodeMatchesJSON: the hand-written encoders say what json.Marshal says.
func TestEncodeMatchesJSON(t *testing.T) {
	resp := &InferResponse{ModelName: "m<1>", ID: "a\"b\n", Outcome: "completed",
		Outputs: []TensorJSON{{Name: "out", Shape: []int64{1, 3}, Datatype: "FP32", Data: json.RawMessage(`[1, 2.5,-3]`)}},
		Timing: Timing{LatencyUs: 10, SLOUs: 20, IntakeUs: 1, MigrationUs: 2, BatchWaitUs: 3, QueueUs: 1, ExecUs: 2, TransferUs: 1,
			Stages: []StageTiming{{Stage: "s0", Worker: "L4#0", Batch: 2, QueueUs: 1, ExecUs: 2, TransferUs: 1}, {Stage: "s1", Worker: "é", Batch: 1}}}}
	drop := &DropResponse{Error: "dropped", Model: "m", Reason: "deadline", Stage: "queue", EstimateUs: 7, Timing: Timing{LatencyUs: 5}}
	for _, v := range []any{resp, drop, &InferResponse{ModelName: "m", Outputs: []TensorJSON{{Name: "o"}}}, &DropResponse{Reason: "x"}} {
		var fast []byte
		switch x := v.(type) {
		case *InferResponse:
			var ok bool
			if fast, ok = AppendInferResponse(nil, x); !ok {
				t.Fatal("fast path refused")
			}
		case *DropResponse:
			fast = AppendDropResponse(nil, x)
		}
		slow, _ := json.Marshal(v)
		var a, b any
		if err := json.Unmarshal(fast, &a); err != nil {
			t.Fatalf("%s: %v", fast, err)
		}
		_ = json.Unmarshal(slow, &b)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("fast %s\njson %s", fast, slow)
		}
	}
}
