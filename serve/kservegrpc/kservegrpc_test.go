package kservegrpc

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/serve"
	"github.com/plan-dev/plan/serve/kserve"
	pb "github.com/plan-dev/plan/serve/kservegrpc/inferencepb"
)

func loadPlan(t testing.TB, name string) *formats.Plan {
	t.Helper()
	p, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "..", "testdata", "serve", name), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// start runs a serve.Server for plan with the gRPC service on a loopback port and returns
// a client; everything stops at the end of the test.
func start(t testing.TB, o serve.Options) (*serve.Server, pb.GRPCInferenceServiceClient, *grpc.ClientConn) {
	t.Helper()
	o.Deploy, o.Policies = testDeploy, testPolicies
	s, err := serve.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g := New(s)
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, g, ln) }()
	conn, err := Dial(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		_ = s.Shutdown(context.Background())
	})
	return s, pb.NewGRPCInferenceServiceClient(conn), conn
}

func TestMetadataRPCs(t *testing.T) {
	_, c, _ := start(t, serve.Options{Plan: loadPlan(t, "wide.json")})
	ctx := context.Background()
	if r, err := c.ServerLive(ctx, &pb.ServerLiveRequest{}); err != nil || !r.Live {
		t.Errorf("ServerLive: %v %v", r, err)
	}
	if r, err := c.ServerReady(ctx, &pb.ServerReadyRequest{}); err != nil || !r.Ready {
		t.Errorf("ServerReady: %v %v", r, err)
	}
	if r, err := c.ServerMetadata(ctx, &pb.ServerMetadataRequest{}); err != nil || r.Name != "plan" || r.Version != "v2" {
		t.Errorf("ServerMetadata: %v %v", r, err)
	}
	md, err := c.ModelMetadata(ctx, &pb.ModelMetadataRequest{Name: "w"})
	if err != nil || md.Name != "w" || len(md.Inputs) != 1 || md.Inputs[0].Datatype != "FP32" || len(md.Outputs) != 1 {
		t.Errorf("ModelMetadata: %v %v", md, err)
	}
	if r, err := c.ModelReady(ctx, &pb.ModelReadyRequest{Name: "w"}); err != nil || !r.Ready {
		t.Errorf("ModelReady: %v %v", r, err)
	}
	for _, call := range []func() error{
		func() error { _, err := c.ModelReady(ctx, &pb.ModelReadyRequest{Name: "nope"}); return err },
		func() error { _, err := c.ModelMetadata(ctx, &pb.ModelMetadataRequest{Name: "nope"}); return err },
		func() error { _, err := c.ModelInfer(ctx, &pb.ModelInferRequest{ModelName: "nope"}); return err },
	} {
		if err := call(); status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), `"nope"`) {
			t.Errorf("unknown model: %v", err)
		}
	}
}

func fp32Raw(vals ...float32) []byte {
	var b []byte
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

func fp16Raw(vals ...float32) []byte {
	var b []byte
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint16(b, kserve.F32ToF16(v))
	}
	return b
}

// TestInfer: typed contents, raw FP32 and raw FP16 requests are served (emulated workers
// carry the input through as the output) and answered in the form they came in.
func TestInfer(t *testing.T) {
	_, c, _ := start(t, serve.Options{Plan: loadPlan(t, "wide.json")})
	ctx := context.Background()
	in := func(dtype string, contents *pb.InferTensorContents) *pb.ModelInferRequest_InferInputTensor {
		return &pb.ModelInferRequest_InferInputTensor{Name: "input", Datatype: dtype, Shape: []int64{1, 4}, Contents: contents}
	}
	r, err := c.ModelInfer(ctx, &pb.ModelInferRequest{ModelName: "w", Id: "a",
		Inputs: []*pb.ModelInferRequest_InferInputTensor{in("FP32", &pb.InferTensorContents{Fp32Contents: []float32{1, 2.5, -3, 4}})}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Id != "a" || len(r.Outputs) != 1 || len(r.RawOutputContents) != 0 {
		t.Fatalf("typed: %v", r)
	}
	if got := r.Outputs[0].GetContents().GetFp32Contents(); len(got) != 4 || got[1] != 2.5 || got[2] != -3 {
		t.Errorf("typed output %v", got)
	}
	if r.Parameters["latency_us"].GetInt64Param() <= 0 || r.Parameters["outcome"].GetStringParam() == "" {
		t.Errorf("parameters %v", r.Parameters)
	}

	r, err = c.ModelInfer(ctx, &pb.ModelInferRequest{ModelName: "w", Inputs: []*pb.ModelInferRequest_InferInputTensor{in("FP32", nil)},
		RawInputContents: [][]byte{fp32Raw(1, 2, 3, 4)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.RawOutputContents) != 1 || string(r.RawOutputContents[0]) != string(fp32Raw(1, 2, 3, 4)) || r.Outputs[0].Datatype != "FP32" || r.Outputs[0].Contents != nil {
		t.Errorf("raw FP32: %v", r)
	}

	r, err = c.ModelInfer(ctx, &pb.ModelInferRequest{ModelName: "w", Inputs: []*pb.ModelInferRequest_InferInputTensor{in("FP16", nil)},
		RawInputContents: [][]byte{fp16Raw(0.5, 1, -2, 65504)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.RawOutputContents) != 1 || string(r.RawOutputContents[0]) != string(fp16Raw(0.5, 1, -2, 65504)) || r.Outputs[0].Datatype != "FP16" {
		t.Errorf("raw FP16: %v", r)
	}
}

// TestInvalidArgument: mismatched raw and typed contents, and every other bad tensor, get
// INVALID_ARGUMENT naming the tensor.
func TestInvalidArgument(t *testing.T) {
	_, c, _ := start(t, serve.Options{Plan: loadPlan(t, "wide.json")})
	tensor := func(dtype string, shape []int64, contents *pb.InferTensorContents) []*pb.ModelInferRequest_InferInputTensor {
		return []*pb.ModelInferRequest_InferInputTensor{{Name: "input", Datatype: dtype, Shape: shape, Contents: contents}}
	}
	four := &pb.InferTensorContents{Fp32Contents: []float32{1, 2, 3, 4}}
	for _, tc := range []struct {
		name string
		req  *pb.ModelInferRequest
		want string
	}{
		{"raw and typed", &pb.ModelInferRequest{Inputs: tensor("FP32", []int64{1, 4}, four), RawInputContents: [][]byte{fp32Raw(1, 2, 3, 4)}}, "raw_input_contents"},
		{"typed in the wrong field", &pb.ModelInferRequest{Inputs: tensor("FP32", []int64{1, 4}, &pb.InferTensorContents{IntContents: []int32{1, 2, 3, 4}})}, "contents.int_contents"},
		{"typed too short", &pb.ModelInferRequest{Inputs: tensor("FP32", []int64{1, 4}, &pb.InferTensorContents{Fp32Contents: []float32{1}})}, "needs 4"},
		{"raw too short", &pb.ModelInferRequest{Inputs: tensor("FP32", []int64{1, 4}, nil), RawInputContents: [][]byte{fp32Raw(1, 2)}}, "needs 16"},
		{"fp16 typed", &pb.ModelInferRequest{Inputs: tensor("FP16", []int64{1, 4}, four)}, "raw_input_contents"},
		{"wrong datatype", &pb.ModelInferRequest{Inputs: tensor("INT32", []int64{1, 4}, &pb.InferTensorContents{IntContents: []int32{1, 2, 3, 4}})}, "datatype"},
		{"batch of two", &pb.ModelInferRequest{Inputs: tensor("FP32", []int64{2, 2}, four)}, "one sample"},
		{"negative dim", &pb.ModelInferRequest{Inputs: tensor("FP32", []int64{1, -4}, four)}, "shape"},
		// A zero-size tensor holds no sample: refused as the HTTP API refuses it.
		{"zero-size", &pb.ModelInferRequest{Inputs: tensor("FP32", []int64{1, 0}, &pb.InferTensorContents{})}, "inputs[0].shape[1]: 0: must be > 0"},
		{"NaN typed", &pb.ModelInferRequest{Inputs: tensor("FP32", []int64{1, 4}, &pb.InferTensorContents{Fp32Contents: []float32{1, float32(math.NaN()), 3, 4}})}, "NaN: not a finite FP32 number"},
		{"Inf raw", &pb.ModelInferRequest{Inputs: tensor("FP32", []int64{1, 4}, nil), RawInputContents: [][]byte{fp32Raw(1, 2, float32(math.Inf(1)), 4)}}, "+Inf: not a finite FP32 number"},
		{"two raw for one input", &pb.ModelInferRequest{Inputs: tensor("FP32", []int64{1, 1}, nil), RawInputContents: [][]byte{fp32Raw(1), fp32Raw(2)}}, "raw_input_contents"},
		{"no inputs", &pb.ModelInferRequest{}, "inputs"},
		{"unknown output", &pb.ModelInferRequest{Inputs: tensor("FP32", []int64{1, 4}, four), Outputs: []*pb.ModelInferRequest_InferRequestedOutputTensor{{Name: "logits"}}}, `unexpected inference output "logits" for model "w": its output is`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.ModelName = "w"
			_, err := c.ModelInfer(context.Background(), tc.req)
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v: want INVALID_ARGUMENT mentioning %q", err, tc.want)
			}
			if tc.req.Inputs != nil && tc.name != "unknown output" && tc.name != "two raw for one input" && !strings.Contains(err.Error(), `"input"`) {
				t.Errorf("%v: the error must name the tensor", err)
			}
		})
	}
}

// TestAnswerError pins the status of every non-200 answer.
func TestAnswerError(t *testing.T) {
	for _, tc := range []struct {
		a    serve.Answer
		code codes.Code
		want string
	}{
		{serve.Answer{Status: 503, Reason: "overload", Stage: "intake", Err: "the server holds 1 requests"}, codes.ResourceExhausted, "overload"},
		{serve.Answer{Status: 503, Reason: "deadline", Stage: "queue", Err: "request dropped at queue: deadline"}, codes.Unavailable, "reason deadline"},
		{serve.Answer{Status: 503, Reason: "shutdown", Stage: "intake"}, codes.Unavailable, "shutdown"},
		{serve.Answer{Status: 400, Err: "inputs[0].shape"}, codes.InvalidArgument, `input "x"`},
		{serve.Answer{Status: 404, Err: "model"}, codes.NotFound, "model"},
		{serve.Answer{Status: 502, Err: "worker"}, codes.Unavailable, "worker"},
		{serve.Answer{Status: 500, Err: "engine"}, codes.Internal, "engine"},
	} {
		err := answerError("x", &tc.a)
		if status.Code(err) != tc.code || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %v mentioning %q", tc.a, err, tc.code, tc.want)
		}
	}
	md := dropTrailer(&serve.Answer{Reason: "deadline", Stage: "s0", RetryUs: 1500})
	if r, s := DropReason(md); r != "deadline" || s != "s0" || md.Get("retry-after-ms")[0] != "2" {
		t.Errorf("trailer %v", md)
	}
}

// burst sends n concurrent requests and returns the errors' codes and drop reasons.
func burst(c pb.GRPCInferenceServiceClient, model string, n int) (map[codes.Code]int, map[string]int) {
	var mu sync.Mutex
	codesSeen, reasons := map[codes.Code]int{}, map[string]int{}
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var tr metadata.MD
			_, err := c.ModelInfer(context.Background(), &pb.ModelInferRequest{ModelName: model,
				Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "input", Datatype: "FP32", Shape: []int64{1, 1}, Contents: &pb.InferTensorContents{Fp32Contents: []float32{1}}}}},
				grpc.Trailer(&tr))
			r, _ := DropReason(tr)
			mu.Lock()
			codesSeen[status.Code(err)]++
			if r != "" {
				reasons[r]++
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return codesSeen, reasons
}

// TestDropsAndOverload: a burst far beyond one GPU's capacity gets UNAVAILABLE drops with
// their reason (the policy's admission, as over HTTP); beyond --max-inflight the server
// answers RESOURCE_EXHAUSTED. A burst is sent up to three times: under -race on a busy
// 2-core machine, one burst's goroutines were scheduled so late that all 300 requests
// were past their deadline at admission and none could be served.
func TestDropsAndOverload(t *testing.T) {
	_, c, _ := start(t, serve.Options{Plan: loadPlan(t, "one-gpu.json")})
	var got map[codes.Code]int
	var reasons map[string]int
	for try := 0; try < 3; try++ {
		got, reasons = burst(c, "m1", 300)
		if got[codes.OK] > 0 {
			break
		}
	}
	if got[codes.Unavailable] == 0 || got[codes.OK] == 0 || len(reasons) == 0 {
		t.Errorf("300 at once on one GPU: codes %v reasons %v: want some served and some UNAVAILABLE with a reason", got, reasons)
	}
	s2, c2, _ := start(t, serve.Options{Plan: loadPlan(t, "one-gpu.json"), MaxInFlight: 1})
	for try := 0; try < 5; try++ {
		got, reasons = burst(c2, "m1", 50)
		if got[codes.ResourceExhausted] > 0 {
			if reasons["overload"] == 0 {
				t.Errorf("RESOURCE_EXHAUSTED without the overload reason: %v", reasons)
			}
			// Counted under RESOURCE_EXHAUSTED's HTTP equivalent, 429.
			m := httptest.NewRecorder()
			s2.ServeHTTP(m, httptest.NewRequest("GET", "/metrics", nil))
			if !strings.Contains(m.Body.String(), `plan_rejected_total{cause="overload",code="429"}`) || strings.Contains(m.Body.String(), `cause="overload",code="503"`) {
				t.Errorf("RESOURCE_EXHAUSTED not counted as code 429:\n%s", m.Body.String())
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("--max-inflight 1: no RESOURCE_EXHAUSTED in 5 bursts of 50: %v", got)
}

// FuzzInputJSON: the tensor decoder never panics and accepts only what it can carry.
func FuzzInputJSON(f *testing.F) {
	f.Add("FP32", int64(1), int64(4), []byte{}, false, 4)
	f.Add("FP16", int64(1), int64(2), []byte{0, 60, 0, 64}, true, 0)
	f.Add("INT8", int64(1), int64(3), []byte{1, 2, 255}, true, 0)
	f.Fuzz(func(t *testing.T, dtype string, d0, d1 int64, raw []byte, isRaw bool, nFP32 int) {
		if nFP32 < 0 || nFP32 > 1024 {
			return
		}
		in := &pb.ModelInferRequest_InferInputTensor{Name: "x", Datatype: dtype, Shape: []int64{d0, d1},
			Contents: &pb.InferTensorContents{Fp32Contents: make([]float32, nFP32)}}
		if isRaw {
			in.Contents = nil
		}
		data, dt, err := inputJSON(in, raw, isRaw, "FP32")
		if err == nil {
			out, rawOut, err := outputTensor(kserve.TensorJSON{Name: "y", Datatype: dt, Data: data}, isRaw, false)
			if err != nil || (isRaw && rawOut == nil) || (!isRaw && out.Contents == nil) {
				t.Fatalf("round trip of %s: %v", data, err)
			}
		}
	})
}

// TestStartCapsConnections: the gRPC listener caps connections per client address as the
// HTTP one does: a second connection from the address is closed at once,
// the first keeps serving.
func TestStartCapsConnections(t *testing.T) {
	s, err := serve.New(serve.Options{Plan: loadPlan(t, "wide.json"), Deploy: testDeploy, Policies: testPolicies, MaxConnsPerIP: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	addr, stop, err := Start(context.Background(), s, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	first, err := Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := pb.NewGRPCInferenceServiceClient(first).ServerLive(ctx, &pb.ServerLiveRequest{}); err != nil {
		t.Fatalf("first connection: %v", err)
	}
	// A raw second connection: the server closes it without a byte.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err == nil || n != 0 || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("second connection from the address: read %d, %v; want it closed", n, err)
	}
	if _, err := pb.NewGRPCInferenceServiceClient(first).ServerLive(ctx, &pb.ServerLiveRequest{}); err != nil {
		t.Errorf("first connection after the refusal: %v", err)
	}
}
