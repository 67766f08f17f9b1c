package kservegrpc

import (
	"context"
	"encoding/binary"
	"math"
	"strconv"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/plan-dev/plan/serve/kserve"
	pb "github.com/plan-dev/plan/serve/kservegrpc/inferencepb"
	"github.com/plan-dev/plan/serve/load"
)

// Dial opens an insecure client connection to a `plan serve --grpc-addr` address.
func Dial(addr string) (*grpc.ClientConn, error) {
	return grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

// Request builds one sample for the model's input as `plan load` does over HTTP: variable
// dimensions 4 (batch 1), a deterministic ramp of values; raw puts it in
// raw_input_contents (FP16 when half), else in typed contents.
func Request(md *kserve.ModelMetadata, raw, half bool) *pb.ModelInferRequest {
	in := md.Inputs[0]
	shape, n := load.SampleShape(md)
	t := &pb.ModelInferRequest_InferInputTensor{Name: in.Name, Datatype: in.Datatype, Shape: shape}
	r := &pb.ModelInferRequest{ModelName: md.Name, Inputs: []*pb.ModelInferRequest_InferInputTensor{t}}
	val := func(i int64) float64 { return float64(i % 7) }
	if raw {
		var b []byte
		for i := int64(0); i < n; i++ {
			switch {
			case half && in.Datatype == "FP32":
				b = binary.LittleEndian.AppendUint16(b, kserve.F32ToF16(float32(val(i))))
			case in.Datatype == "FP64":
				b = binary.LittleEndian.AppendUint64(b, math.Float64bits(val(i)))
			default:
				b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(val(i))))
			}
		}
		if half && in.Datatype == "FP32" {
			t.Datatype = "FP16"
		}
		r.RawInputContents = [][]byte{b}
		return r
	}
	c := &pb.InferTensorContents{}
	for i := int64(0); i < n; i++ {
		switch in.Datatype {
		case "FP64":
			c.Fp64Contents = append(c.Fp64Contents, val(i))
		case "BOOL":
			c.BoolContents = append(c.BoolContents, false)
		case "INT64":
			c.Int64Contents = append(c.Int64Contents, int64(val(i)))
		case "INT8", "INT16", "INT32":
			c.IntContents = append(c.IntContents, int32(val(i)))
		default:
			c.Fp32Contents = append(c.Fp32Contents, float32(val(i)))
		}
	}
	t.Contents = c
	return r
}

// Sender returns the load.Sender of `plan load --grpc`: ModelInfer over conn, the request
// built once per model (Request; raw and half as there). A drop answers 503 with the
// trailers' reason and stage, overload (RESOURCE_EXHAUSTED) too; other codes map to the HTTP
// statuses the HTTP path would answer.
func Sender(conn grpc.ClientConnInterface, raw, half bool) load.Sender {
	client := pb.NewGRPCInferenceServiceClient(conn)
	var reqs sync.Map // model → *pb.ModelInferRequest
	return func(ctx context.Context, model string, md *kserve.ModelMetadata, s *load.Sample) {
		v, ok := reqs.Load(model)
		if !ok {
			v, _ = reqs.LoadOrStore(model, Request(md, raw, half))
		}
		var trailer metadata.MD
		ctx = metadata.AppendToOutgoingContext(ctx, traceKey, strconv.FormatInt(s.Index, 10))
		if s.InTokens > 0 || s.OutTokens > 0 {
			ctx = metadata.AppendToOutgoingContext(ctx, tokensKey, strconv.Itoa(int(s.InTokens))+","+strconv.Itoa(int(s.OutTokens)))
		}
		resp, err := client.ModelInfer(ctx, v.(*pb.ModelInferRequest), grpc.Trailer(&trailer))
		if err == nil {
			s.Status = 200
			if p, ok := resp.GetParameters()["latency_us"]; ok {
				s.ServerLatency = durationUs(p.GetInt64Param())
			}
			if p, ok := resp.GetParameters()["first_token_us"]; ok {
				s.ServerFirstToken = durationUs(p.GetInt64Param())
			}
			return
		}
		st, _ := status.FromError(err)
		switch st.Code() {
		case codes.Unavailable, codes.ResourceExhausted:
			s.Status = 503
			s.Reason, s.Stage = DropReason(trailer)
			if s.Reason == "" {
				s.Reason, s.Stage = "grpc-"+st.Code().String(), "server"
			}
		case codes.DeadlineExceeded, codes.Canceled:
			s.Status, s.Stage, s.Reason = 0, "client", load.ReasonCancelled
		case codes.InvalidArgument:
			s.Status, s.Stage, s.Reason = 400, "server", "http-400"
		case codes.NotFound:
			s.Status, s.Stage, s.Reason = 404, "server", "http-404"
		default:
			s.Status, s.Stage, s.Reason = 500, "server", "grpc-"+st.Code().String()
		}
	}
}
