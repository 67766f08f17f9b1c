package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/plan-dev/plan/serve/kserve"
)

// StageTransport carries a remote stage's batches over a protocol other than KServe v2
// HTTP/JSON, chosen by the scheme of the endpoint's URL: grpc://HOST:PORT is the KServe v2
// gRPC protocol (serve/kservegrpc.StageClient, attached by `plan serve --workers remote`).
// Metadata doubles as the health check; Infer sends one batch (the batch dimension first).
type StageTransport interface {
	Metadata(ctx context.Context, addr, model string) (*kserve.ModelMetadata, error)
	Infer(ctx context.Context, addr, model string, in kserve.TensorJSON) (*kserve.TensorJSON, error)
	Close() error
}

// transportSchemes are the URL schemes endpoints files may use besides http and https.
var transportSchemes = map[string]bool{"grpc": true}

// SetTransport attaches the transport of endpoints whose URLs use scheme.
func (e *Endpoints) SetTransport(scheme string, t StageTransport) {
	if e.transports == nil {
		e.transports = map[string]StageTransport{}
	}
	e.transports[scheme] = t
}

// transport returns the transport and address of a non-HTTP endpoint URL (nil for http(s)),
// or an error when no transport serves its scheme.
func (e *Endpoints) transport(raw string) (StageTransport, string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "http" || u.Scheme == "https" {
		return nil, "", nil
	}
	if t := e.transports[u.Scheme]; t != nil {
		return t, u.Host, nil
	}
	return nil, "", fmt.Errorf("endpoint %s: no %s transport in this server", raw, u.Scheme)
}

// checkTransport is check for an endpoint served by a StageTransport.
func (r *Remote) checkTransport(t StageTransport, addr string, e resolved) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second) // as check
	defer cancel()
	md, err := t.Metadata(ctx, addr, e.model)
	if err != nil {
		return fmt.Errorf("remote endpoint %s: model %q: %v", e.url, e.model, err)
	}
	if len(md.Inputs) == 0 || len(md.Outputs) == 0 {
		return fmt.Errorf("remote endpoint %s: model %q: metadata without inputs and outputs", e.url, e.model)
	}
	r.meta[e.url+"|"+e.model] = md
	return nil
}

// deliver splits a batch's output back per request (the batch dimension first).
func (r *Remote) deliver(job *Job, live []int, e resolved, o *kserve.TensorJSON, fail func(error)) {
	elems := splitFlat(o.Data)
	n := len(live)
	if len(o.Shape) == 0 || o.Shape[0] != int64(n) || len(elems)%n != 0 {
		fail(fmt.Errorf("remote endpoint %s: output %q has shape %v for a batch of %d", e.url, o.Name, o.Shape, n))
		return
	}
	per := len(elems) / n
	sampleShape := append([]int64{1}, o.Shape[1:]...)
	for k, i := range live {
		d := "[" + strings.Join(elems[k*per:(k+1)*per], ",") + "]"
		job.Payload[i] = &Payload{Tensor: kserve.TensorJSON{Name: o.Name, Shape: sampleShape, Datatype: o.Datatype, Data: json.RawMessage(d)}}
	}
}
