//go:build cgo

package measure

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/plan-dev/plan/profiler/onnx"
)

var (
	ortMu    sync.Mutex
	ortTried bool // a library was found and loading it was tried
	ortPath  string
	ortErr   error
)

// initORT loads libonnxruntime once per process. A failed load is remembered (the library
// cannot be loaded twice into one process anyway); a library not found is not, since nothing
// was loaded: a later call (PLAN_ORT_LIB set or changed, `make assets` run since) looks again.
func initORT() (string, error) {
	ortMu.Lock()
	defer ortMu.Unlock()
	if ortTried {
		return ortPath, ortErr
	}
	path, err := libraryPath()
	if err != nil {
		return "", err
	}
	ortTried, ortPath = true, path
	ort.SetSharedLibraryPath(ortPath)
	if err := ort.InitializeEnvironment(ort.WithLogLevelError()); err != nil {
		ortErr = fmt.Errorf("%w: loading %s: %v (the bindings need ONNX Runtime %s; run `make assets` or set %s)", ErrNoLibrary, ortPath, err, ORTMinor, LibEnv)
	} else if v := ort.GetVersion(); !strings.HasPrefix(v, ORTMinor) {
		ortErr = fmt.Errorf("%w: %s is ONNX Runtime %s, the bindings need %s.x (run `make assets` or set %s)", ErrNoLibrary, ortPath, v, ORTMinor, LibEnv)
	}
	return ortPath, ortErr
}

type ortSession struct {
	s       *ort.DynamicAdvancedSession
	spec    sessionSpec
	inputs  []ort.Value
	outputs []ort.Value
	rng     *rand.Rand
	batch   int64
}

// sessionOptions loads the ONNX Runtime library (once per process) and makes the options of a
// session with threads intra-op threads and one inter-op thread (threads 0: ONNX Runtime's
// defaults). The caller destroys them.
func sessionOptions(threads int) (*ort.SessionOptions, error) {
	if _, err := initORT(); err != nil {
		return nil, err
	}
	opts, err := ort.NewSessionOptions()
	if err != nil {
		return nil, err
	}
	if threads > 0 {
		if err := opts.SetIntraOpNumThreads(threads); err != nil {
			opts.Destroy()
			return nil, err
		}
		if err := opts.SetInterOpNumThreads(1); err != nil {
			opts.Destroy()
			return nil, err
		}
	}
	return opts, nil
}

func newSession(spec sessionSpec) (session, error) {
	opts, err := sessionOptions(spec.threads)
	if err != nil {
		return nil, err
	}
	defer opts.Destroy()
	// Idle pool threads spin by default, waiting for work; with one session per block timed in
	// interleaved rounds, the spinning threads of the session that just ran would steal the
	// cores from the next one and inflate its time.
	for _, key := range []string{"session.intra_op.allow_spinning", "session.inter_op.allow_spinning"} {
		if err := opts.AddSessionConfigEntry(key, "0"); err != nil {
			return nil, err
		}
	}
	if spec.profilePrefix != "" {
		if err := opts.EnableProfiling(spec.profilePrefix); err != nil {
			return nil, err
		}
	}
	if err := appendProvider(opts, spec.device, spec.trt); err != nil {
		return nil, err
	}
	names := func(ios []ioSpec) []string {
		out := make([]string, len(ios))
		for i, io := range ios {
			out[i] = io.name
		}
		return out
	}
	s, err := ort.NewDynamicAdvancedSessionWithONNXData(spec.model, names(spec.inputs), names(spec.outputs), opts)
	if err != nil {
		return nil, fmt.Errorf("onnx runtime: creating a session for %s: %w", spec.what, err)
	}
	return &ortSession{s: s, spec: spec, rng: rand.New(rand.NewPCG(uint64(spec.seed), 77))}, nil
}

// appendProvider selects the execution provider for a device name.
func appendProvider(opts *ort.SessionOptions, device string, trt bool) error {
	kind, id, err := ParseDevice(device)
	if err != nil {
		return err
	}
	if kind == "cpu" {
		if trt {
			return fmt.Errorf("%w: --trt needs a CUDA device (--device cuda:N)", ErrDevice)
		}
		return nil
	}
	idStr := fmt.Sprint(id)
	if trt {
		if err := appendOn(device, "TensorRT", idStr, ort.NewTensorRTProviderOptions, opts.AppendExecutionProviderTensorRT); err != nil {
			return err
		}
	}
	return appendOn(device, "CUDA", idStr, ort.NewCUDAProviderOptions, opts.AppendExecutionProviderCUDA)
}

// providerOptions is an execution provider's options (CUDA's, TensorRT's).
type providerOptions interface {
	Update(map[string]string) error
	Destroy() error
}

// appendOn appends execution provider name on device's GPU id: its options from newOpts,
// pointed at the GPU, handed to add. A failure at any step means this build or machine lacks
// the provider (missingProvider).
func appendOn[O providerOptions](device, name, id string, newOpts func() (O, error), add func(O) error) error {
	o, err := newOpts()
	if err != nil {
		return missingProvider(device, name, err)
	}
	defer o.Destroy()
	if err := o.Update(map[string]string{"device_id": id}); err != nil {
		return missingProvider(device, name, err)
	}
	if err := add(o); err != nil {
		return missingProvider(device, name, err)
	}
	return nil
}

func missingProvider(device, provider string, err error) error {
	return fmt.Errorf("%w: --device %s: the installed ONNX Runtime (%s) has no usable %s execution provider (%v); the library `make assets` installs is CPU-only: point %s at a GPU build of ONNX Runtime %s.x, or use --device cpu",
		ErrDevice, device, ortPath, provider, err, LibEnv, ORTMinor)
}

func (s *ortSession) bind(batch int) error {
	s.free()
	s.batch = int64(batch)
	alloc := func(ios []ioSpec, fill bool) ([]ort.Value, error) {
		var vals []ort.Value
		for _, io := range ios {
			shape := make([]int64, len(io.shape))
			for i, d := range io.shape {
				if d < 0 {
					d = int64(batch)
				}
				shape[i] = d
			}
			v, err := s.newTensor(io, ort.NewShape(shape...), fill)
			if err != nil {
				for _, x := range vals {
					x.Destroy()
				}
				return nil, fmt.Errorf("%s: tensor %q: %w", s.spec.what, io.name, err)
			}
			vals = append(vals, v)
		}
		return vals, nil
	}
	var err error
	if s.inputs, err = alloc(s.spec.inputs, true); err != nil {
		return err
	}
	if s.outputs, err = alloc(s.spec.outputs, false); err != nil {
		return err
	}
	return nil
}

// newTensor allocates a tensor; inputs get random data (normal floats, zero indices, which
// are valid for any Gather).
func (s *ortSession) newTensor(io ioSpec, shape ort.Shape, fill bool) (ort.Value, error) {
	switch io.dtype {
	case onnx.Float:
		t, err := ort.NewEmptyTensor[float32](shape)
		if err == nil && fill {
			d := t.GetData()
			for i := range d {
				d[i] = float32(s.rng.NormFloat64())
			}
		}
		return t, err
	case onnx.Double:
		t, err := ort.NewEmptyTensor[float64](shape)
		if err == nil && fill {
			d := t.GetData()
			for i := range d {
				d[i] = s.rng.NormFloat64()
			}
		}
		return t, err
	case onnx.Int64:
		t, err := ort.NewEmptyTensor[int64](shape)
		if v, ok := s.valueOf(io); err == nil && fill && ok {
			copy(t.GetData(), v)
		}
		return t, err
	case onnx.Int32:
		t, err := ort.NewEmptyTensor[int32](shape)
		if v, ok := s.valueOf(io); err == nil && fill && ok {
			d := t.GetData()
			for i := range d[:min(len(d), len(v))] {
				d[i] = int32(v[i])
			}
		}
		return t, err
	case onnx.Int8:
		return ort.NewEmptyTensor[int8](shape)
	case onnx.Uint8:
		return ort.NewEmptyTensor[uint8](shape)
	case onnx.Bool:
		return ort.NewEmptyTensor[bool](shape)
	}
	return nil, fmt.Errorf("element type %s is not supported by the measured backend", io.dtype)
}

// valueOf gives the content of a shape-valued input at the bound batch size.
func (s *ortSession) valueOf(io ioSpec) ([]int64, bool) {
	if io.value == nil {
		return nil, false
	}
	return io.value(s.batch)
}

func (s *ortSession) run() error {
	if err := s.s.Run(s.inputs, s.outputs); err != nil {
		return fmt.Errorf("onnx runtime: running %s: %w", s.spec.what, err)
	}
	return nil
}

func (s *ortSession) free() {
	for _, v := range s.inputs {
		v.Destroy()
	}
	for _, v := range s.outputs {
		v.Destroy()
	}
	s.inputs, s.outputs = nil, nil
}

// close releases the session; with profiling enabled ONNX Runtime writes its JSON trace now.
func (s *ortSession) close() error {
	s.free()
	return s.s.Destroy()
}

func ortVersion() string {
	if _, err := initORT(); err != nil {
		return ""
	}
	return ort.GetVersion()
}
