//go:build cgo

package measure

import (
	"fmt"

	ort "github.com/yalue/onnxruntime_go"
)

// FloatTensor is a dense float32 tensor (row-major) exchanged with a Session.
type FloatTensor struct {
	Shape []int64
	Data  []float32
}

// Session is an ONNX Runtime session for serving (plan serve's onnx workers): named float32
// inputs in, float32 outputs out, any batch size. Unlike the measuring sessions it takes
// real data. Run may be called from several goroutines at once (ONNX Runtime sessions are
// thread-safe for Run).
type Session struct {
	s        *ort.DynamicAdvancedSession
	inputs   []string
	outputs  []string
	what     string
	released bool
}

// NewSession loads the ONNX Runtime library (once per process) and creates a session of
// model on device (cpu or cuda:N) with threads intra-op threads (0 = ONNX Runtime's
// default). Errors wrap ErrNoLibrary or ErrDevice where those apply.
func NewSession(what string, model []byte, inputs, outputs []string, device string, threads int) (*Session, error) {
	opts, err := sessionOptions(threads)
	if err != nil {
		return nil, err
	}
	defer opts.Destroy()
	if err := appendProvider(opts, device, false); err != nil {
		return nil, err
	}
	s, err := ort.NewDynamicAdvancedSessionWithONNXData(model, inputs, outputs, opts)
	if err != nil {
		return nil, fmt.Errorf("onnx runtime: creating a session for %s: %w", what, err)
	}
	return &Session{s: s, inputs: inputs, outputs: outputs, what: what}, nil
}

// Run runs the session on inputs (in the order of the input names) and returns the outputs
// (in the order of the output names), copied into Go memory.
func (s *Session) Run(inputs []FloatTensor) ([]FloatTensor, error) {
	if len(inputs) != len(s.inputs) {
		return nil, fmt.Errorf("%s: %d inputs given, the session takes %d", s.what, len(inputs), len(s.inputs))
	}
	in := make([]ort.Value, 0, len(inputs))
	defer func() {
		for _, v := range in {
			v.Destroy()
		}
	}()
	for i, t := range inputs {
		v, err := ort.NewTensor(ort.NewShape(t.Shape...), t.Data)
		if err != nil {
			return nil, fmt.Errorf("%s: input %q: %w", s.what, s.inputs[i], err)
		}
		in = append(in, v)
	}
	out := make([]ort.Value, len(s.outputs))
	if err := s.s.Run(in, out); err != nil {
		for _, v := range out {
			if v != nil {
				v.Destroy()
			}
		}
		return nil, fmt.Errorf("onnx runtime: running %s: %w", s.what, err)
	}
	res := make([]FloatTensor, len(out))
	var firstErr error
	for i, v := range out {
		t, ok := v.(*ort.Tensor[float32])
		if !ok && firstErr == nil {
			firstErr = fmt.Errorf("%s: output %q is not a float32 tensor", s.what, s.outputs[i])
		}
		if ok {
			res[i] = FloatTensor{Shape: append([]int64(nil), t.GetShape()...), Data: append([]float32(nil), t.GetData()...)}
		}
		v.Destroy()
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return res, nil
}

// Close releases the session.
func (s *Session) Close() error {
	if s.released {
		return nil
	}
	s.released = true
	return s.s.Destroy()
}

// LibraryAvailable reports whether ONNX Runtime can be loaded (nil) or why not.
func LibraryAvailable() error {
	_, err := initORT()
	return err
}
