package serve

import (
	"context"
	"errors"
	"net/http"

	"github.com/plan-dev/plan/serve/kserve"
)

// versioned wraps a /v2/models/{model}/versions/{version}/... handler: an unknown version is
// 404 (counted as unknown-version), a known one is the unversioned route's answer.
func (s *Server) versioned(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("model")
		if _, _, ok := s.Specs(name); !ok {
			s.unknownModel(w, name)
			return
		}
		if err := kserve.CheckModelVersion(name, r.PathValue("version")); err != nil {
			s.Reject(http.StatusNotFound, "unknown-version")
			writeJSON(w, http.StatusNotFound, kserve.ErrorResponse{Error: err.Error()})
			return
		}
		h(w, r)
	}
}

// errNotReady is Readiness's answer while the server itself is not ready (shutting down,
// workers not ready, every worker marked down); a front end's own reason is its error.
var errNotReady = errors.New("not ready")

// Readiness reports what GET /v2/health/ready answers (nil: 200 ready), for the health
// services of other protocols (gRPC's grpc.health.v1): not shutting down, workers ready, at
// least one worker up, and every front end's own check (a durable queue reachable).
func (s *Server) Readiness(ctx context.Context) error {
	if s.closing.Load() || !s.m.isReady() || s.noWorker.Load() {
		return errNotReady
	}
	return s.frontendsReady(ctx)
}
