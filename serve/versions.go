package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/serve/kserve"
)

// ModelVersion is the one version of every model a plan serves. A plan names no versions (a
// new plan replaces the old one whole, PUT /v1/plan), so the KServe v2 protocol's version
// (ecosystem digest §1: ModelReady, ModelMetadata and ModelInfer all carry one) has one rule,
// the same on HTTP and gRPC: version "1", or no version, which means the
// latest, i.e. "1". Any other version is unknown: 404 on HTTP, NOT_FOUND on gRPC.
const ModelVersion = "1"

// CheckModelVersion returns nil for a version the rule accepts ("" or ModelVersion), else
// the error to answer, naming the model, the version and the one served.
func CheckModelVersion(model, version string) error {
	if version == "" || version == ModelVersion {
		return nil
	}
	return fmt.Errorf("model %s has no version %s: a plan serves version %q only (or leave the version out)", formats.Echo(model), formats.Echo(version), ModelVersion)
}

// versioned wraps a /v2/models/{model}/versions/{version}/... handler: an unknown version is
// 404 (counted as unknown-version), a known one is the unversioned route's answer.
func (s *Server) versioned(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("model")
		if _, g, ok := s.model(name); !ok {
			s.unknownModel(w, name, g)
			return
		}
		if err := CheckModelVersion(name, r.PathValue("version")); err != nil {
			s.m.reject(http.StatusNotFound, "unknown-version")
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
