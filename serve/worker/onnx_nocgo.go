//go:build !cgo

package worker

import (
	"errors"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
)

// ONNXFactory returns a factory that fails: onnx workers need cgo (ONNX Runtime is a C
// library loaded at run time).
func ONNXFactory(ONNXOptions) ExecutorFactory {
	return func(Clock, *dataplane.Deployment, *formats.Plan) (Executor, error) {
		return nil, errors.New("onnx workers need a build with cgo (CGO_ENABLED=1): ONNX Runtime is a C library")
	}
}
