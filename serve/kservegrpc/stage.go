package kservegrpc

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/grpc"

	"github.com/plan-dev/plan/serve/kserve"
	pb "github.com/plan-dev/plan/serve/kservegrpc/inferencepb"
)

// StageClient is the worker.StageTransport of grpc:// endpoints: a remote worker sends each
// batch to a KServe v2 gRPC server (Triton's port 8001, or another `plan serve
// --grpc-addr`) as raw little-endian contents, one connection per address.
type StageClient struct {
	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
}

// NewStageClient returns a StageClient with no connection yet.
func NewStageClient() *StageClient { return &StageClient{conns: map[string]*grpc.ClientConn{}} }

func (c *StageClient) client(addr string) (pb.GRPCInferenceServiceClient, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	conn, ok := c.conns[addr]
	if !ok {
		var err error
		if conn, err = Dial(addr); err != nil {
			return nil, err
		}
		c.conns[addr] = conn
	}
	return pb.NewGRPCInferenceServiceClient(conn), nil
}

// Metadata implements worker.StageTransport: ServerReady, then ModelMetadata.
func (c *StageClient) Metadata(ctx context.Context, addr, model string) (*kserve.ModelMetadata, error) {
	cl, err := c.client(addr)
	if err != nil {
		return nil, err
	}
	if r, err := cl.ServerReady(ctx, &pb.ServerReadyRequest{}); err != nil || !r.GetReady() {
		return nil, fmt.Errorf("not ready (ServerReady: %v)", err)
	}
	r, err := cl.ModelMetadata(ctx, &pb.ModelMetadataRequest{Name: model})
	if err != nil {
		return nil, fmt.Errorf("ModelMetadata: %v", err)
	}
	md := &kserve.ModelMetadata{Name: r.GetName(), Versions: r.GetVersions(), Platform: r.GetPlatform()}
	for _, t := range r.GetInputs() {
		md.Inputs = append(md.Inputs, kserve.TensorSpec{Name: t.GetName(), Datatype: t.GetDatatype(), Shape: t.GetShape()})
	}
	for _, t := range r.GetOutputs() {
		md.Outputs = append(md.Outputs, kserve.TensorSpec{Name: t.GetName(), Datatype: t.GetDatatype(), Shape: t.GetShape()})
	}
	return md, nil
}

// Infer implements worker.StageTransport: one ModelInfer with the batch in raw contents; the
// answer's first output (raw or typed) comes back as a JSON-data tensor.
func (c *StageClient) Infer(ctx context.Context, addr, model string, in kserve.TensorJSON) (*kserve.TensorJSON, error) {
	cl, err := c.client(addr)
	if err != nil {
		return nil, err
	}
	enc, raw, err := outputTensor(in, true, false)
	if err != nil {
		return nil, err
	}
	req := &pb.ModelInferRequest{ModelName: model, Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: in.Name, Datatype: enc.Datatype, Shape: in.Shape}},
		RawInputContents: [][]byte{raw}}
	resp, err := cl.ModelInfer(ctx, req)
	if err != nil {
		return nil, err
	}
	if len(resp.GetOutputs()) == 0 {
		return nil, fmt.Errorf("ModelInfer answered no output")
	}
	o := resp.GetOutputs()[0]
	t := &pb.ModelInferRequest_InferInputTensor{Name: o.GetName(), Datatype: o.GetDatatype(), Shape: o.GetShape(), Contents: o.GetContents()}
	var rawOut []byte
	isRaw := len(resp.GetRawOutputContents()) > 0
	if isRaw {
		rawOut = resp.GetRawOutputContents()[0]
	}
	data, dtype, err := inputJSON(t, rawOut, isRaw, o.GetDatatype())
	if err != nil {
		return nil, fmt.Errorf("the answer's %s", err)
	}
	return &kserve.TensorJSON{Name: o.GetName(), Shape: o.GetShape(), Datatype: dtype, Data: data}, nil
}

// Close implements worker.StageTransport: closes every connection.
func (c *StageClient) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for a, conn := range c.conns {
		_ = conn.Close()
		delete(c.conns, a)
	}
	return nil
}
