package kserve

import (
	"fmt"

	"github.com/plan-dev/plan/formats"
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
