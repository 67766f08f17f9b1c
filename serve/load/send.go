package load

import (
	"context"
	"errors"
	"time"

	"github.com/plan-dev/plan/serve/kserve"
)

// Sender sends one request for model (its metadata md) over another protocol than HTTP/JSON
// (serve/kservegrpc.Sender: KServe v2 gRPC) and fills in the sample as do does: Status is
// the HTTP-equivalent status (200, 503 with Reason and Stage, …; 0 = transport error),
// ServerLatency the server's reported latency when it reports one.
type Sender func(ctx context.Context, model string, md *kserve.ModelMetadata, s *Sample)

// send runs a Sender within the request timeout and times it.
func send(ctx context.Context, f Sender, t *target, s *Sample, timeout time.Duration) {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	begin := time.Now()
	f(rctx, t.name, t.md, s)
	s.Latency = time.Since(begin)
	if s.Status == 0 && s.Stage == "" {
		s.Stage, s.Reason = "client", "error"
		if errors.Is(rctx.Err(), context.DeadlineExceeded) {
			s.Reason = ReasonCancelled
		}
	}
}
