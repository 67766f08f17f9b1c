package kservegrpc

import (
	"context"
	"net"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	grpchealth "google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/plan-dev/plan/serve"
	pb "github.com/plan-dev/plan/serve/kservegrpc/inferencepb"
)

// healthPoll is how often Start refreshes the health service's status from the server's
// readiness, so a Watch sees a change within it (a Check reads the readiness itself).
const healthPoll = 500 * time.Millisecond

// health is grpc.health.v1 (ecosystem digest §7: Kubernetes gRPC probes and grpcurl expect
// it) over grpc-go's implementation: the whole server ("") and the inference service are
// SERVING exactly while serve.Server.Readiness is nil (GET /v2/health/ready is 200), else
// NOT_SERVING: while workers start, while every worker is marked down, while a durable queue
// is unreachable, and from the start of a shutdown on.
type health struct {
	*grpchealth.Server
	s *serve.Server
	// stopping closes when the listener stops: Watch streams end (a graceful stop waits
	// for every stream, and a Watch never ends on its own).
	stopping  chan struct{}
	closeOnce sync.Once
}

func registerHealth(g *grpc.Server, s *serve.Server) *health {
	h := &health{Server: grpchealth.NewServer(), s: s, stopping: make(chan struct{})}
	h.refresh(context.Background())
	healthpb.RegisterHealthServer(g, h)
	return h
}

// refresh sets both services' status from the server's readiness now.
func (h *health) refresh(ctx context.Context) {
	st := healthpb.HealthCheckResponse_SERVING
	if h.s.Readiness(ctx) != nil {
		st = healthpb.HealthCheckResponse_NOT_SERVING
	}
	h.SetServingStatus("", st)
	h.SetServingStatus(pb.GRPCInferenceService_ServiceDesc.ServiceName, st)
}

// Check answers from the readiness at the time of the call (not the last poll's).
func (h *health) Check(ctx context.Context, r *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	h.refresh(ctx)
	return h.Server.Check(ctx, r)
}

// Watch is grpc-go's Watch on a stream whose context also ends when the listener stops.
func (h *health) Watch(r *healthpb.HealthCheckRequest, stream healthpb.Health_WatchServer) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	go func() {
		select {
		case <-h.stopping:
			cancel()
		case <-ctx.Done():
		}
	}()
	return h.Server.Watch(r, &stoppableStream{Health_WatchServer: stream, ctx: ctx})
}

// stoppableStream is a Watch stream with the context Watch gives it.
type stoppableStream struct {
	healthpb.Health_WatchServer
	ctx context.Context
}

func (s *stoppableStream) Context() context.Context { return s.ctx }

// stop reports NOT_SERVING to every watcher, then ends their streams.
func (h *health) stop() {
	h.Shutdown()
	h.closeOnce.Do(func() { close(h.stopping) })
}

// follow refreshes the status every healthPoll until ctx ends, for Watch streams.
func (h *health) follow(ctx context.Context) {
	t := time.NewTicker(healthPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			h.refresh(ctx)
		}
	}
}

// The health reserve. The gRPC listener is capped like the HTTP one (serve.LimitListener:
// total and per-client connections), and its last few slots under the total
// cap are a reserve: a connection accepted into one (serve.ReservedConn) may call only the
// health and reflection services, so a flood of inference clients up to the cap still
// leaves a kubelet's gRPC probe a connection that answers. Which connection is reserved is
// known only at accept; reserveCreds carries it from the handshake to each call's peer.

// reserveCreds is insecure transport credentials whose AuthInfo says whether the connection
// holds a reserve slot.
type reserveCreds struct {
	credentials.TransportCredentials
}

// reserveInfo is the AuthInfo of a connection that reserveCreds accepted; conn is the
// connection, closed once it carried a call the reserve refuses.
type reserveInfo struct {
	credentials.AuthInfo
	reserved bool
	conn     net.Conn
}

// reserveCloseDelay is how long a reserve connection that carried a refused call stays open:
// long enough for the refusal to reach its client, then the slot is free for the next
// probe. gRPC clients keep their connections, so without the close an inference client
// that landed in the reserve would hold the slot for good.
const reserveCloseDelay = 100 * time.Millisecond

func (c reserveCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	out, ai, err := c.TransportCredentials.ServerHandshake(conn)
	if err != nil {
		return out, ai, err
	}
	return out, reserveInfo{AuthInfo: ai, reserved: serve.ReservedConn(conn), conn: out}, nil
}

func (c reserveCreds) Clone() credentials.TransportCredentials {
	return reserveCreds{c.TransportCredentials.Clone()}
}

// reserveLimited reports the error for a call on a reserve connection to a method other than
// health or reflection (nil: the call goes on).
func reserveLimited(ctx context.Context, method string) error {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil
	}
	ri, ok := p.AuthInfo.(reserveInfo)
	if !ok || !ri.reserved {
		return nil
	}
	if strings.HasPrefix(method, "/grpc.health.v1.Health/") || strings.HasPrefix(method, "/grpc.reflection.") {
		return nil
	}
	time.AfterFunc(reserveCloseDelay, func() { _ = ri.conn.Close() })
	return status.Errorf(codes.ResourceExhausted, "%s: the server is at its connection cap; this connection holds a slot reserved for health checks (grpc.health.v1, reflection) and closes: retry later", method)
}

func reserveOnlyHealth(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := reserveLimited(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func reserveOnlyHealthStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if err := reserveLimited(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	return h(srv, ss)
}

// serverCreds is the transport security of every gRPC server: none (plaintext, as Triton's
// port 8001), with the reserve flag.
func serverCreds() grpc.ServerOption { return grpc.Creds(reserveCreds{insecure.NewCredentials()}) }
