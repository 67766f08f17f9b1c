//go:build !cgo

package measure

import "fmt"

// Without cgo the ONNX Runtime bindings cannot be built; the rest of plan still works.
func initORT() (string, error) {
	return "", fmt.Errorf("%w: this plan binary was built without cgo (CGO_ENABLED=0); rebuild with CGO_ENABLED=1 to measure with ONNX Runtime", ErrNoLibrary)
}

func newSession(spec sessionSpec) (session, error) {
	_, err := initORT()
	return nil, err
}

func ortVersion() string { return "" }
