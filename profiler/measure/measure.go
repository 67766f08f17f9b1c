// Package measure is the measured backend of `plan profile`: it times an ONNX model with ONNX
// Runtime (github.com/yalue/onnxruntime_go, libonnxruntime loaded at run time). Per-layer
// latency comes from ONNX Runtime's own profiler (fused kernels are mapped back to the layers
// they contain); per-block latency from timing each block's subgraph (onnx.Subgraph) as its
// own session at every batch size, with warm-up and repeats until the median is stable; vGPU
// level v runs v sessions of a block concurrently, so interference is inside the number, as
// PPipe profiles with MPS.
package measure

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/base/quantile"
	"github.com/plan-dev/plan/profiler/graph"
	"github.com/plan-dev/plan/profiler/onnx"
)

// Options configure a measurement.
type Options struct {
	// Model is the ONNX file's content.
	Model []byte
	// Graph is Model's IR (from onnx.Parse(Model).Graph(shape)); nil derives it with the
	// shapes the file declares. Its first input's shape fixes the dynamic dimensions.
	Graph *graph.Graph
	// Blocks to time, as ranges of Graph's nodes; nil times the whole model as one block.
	Blocks []formats.Block
	// Batches to measure (default 1).
	Batches []int
	// Device is "cpu" (default) or "cuda:N".
	Device string
	// TRT adds the TensorRT execution provider in front of CUDA.
	TRT bool
	// VGPU lists the vGPU levels (default 1): level v runs v sessions concurrently.
	VGPU []int
	// Warmup rounds run before timing (default 3); MinRepeats and MaxRepeats bound the timed
	// rounds (defaults 10 and 200): timing stops once every median moved less than 1% between
	// two checks, at MaxRepeats, or when MaxTime per (vGPU level, batch) is spent.
	Warmup, MinRepeats, MaxRepeats int
	// MaxTime bounds the timing of one (vGPU level, batch) once MinRepeats are done (default 10s).
	MaxTime time.Duration
	// Threads sets ONNX Runtime's intra-op threads per session (0 = its default, all cores).
	Threads int
	// SkipLayers skips the per-layer profiling pass.
	SkipLayers bool
	// Seed for the random input data.
	Seed int64
	// Progress, when set, is called after every finished measurement.
	Progress func(done, total int)
}

// Stats summarizes repeated timings of one thing.
type Stats struct {
	MedianUs float64 `json:"median_us"`
	P90Us    float64 `json:"p90_us"`
	// CV is the coefficient of variation (standard deviation / mean).
	CV float64 `json:"cv"`
	// MinUs is the fastest run: the least disturbed by other load on the machine.
	MinUs   float64 `json:"min_us"`
	Repeats int     `json:"repeats"`
}

// LayerTime is the measured latency of one graph node.
type LayerTime struct {
	Name string  `json:"name"`
	Op   string  `json:"op"`
	Us   float64 `json:"us"`
	// Kernel is the ONNX Runtime node the time was measured on; for a layer fused into
	// another kernel it names that kernel and Fused is true (the kernel's time is split
	// over the layers it contains in proportion to their FLOPs and traffic).
	Kernel string `json:"kernel,omitempty"`
	Fused  bool   `json:"fused,omitempty"`
}

// Measurement holds the timings at one (vGPU level, batch).
type Measurement struct {
	VGPU   int     `json:"vgpu"`
	Batch  int     `json:"batch"`
	Blocks []Stats `json:"blocks"`
	// Total is the whole model timed as one session.
	Total Stats `json:"total"`
}

// Result is everything one Run measured.
type Result struct {
	Device string `json:"device"`
	// GPU is the device's type for profile entries: "cpu", or the GPU type of cuda:N
	// ("L4", "A100"...) when nvidia-smi identifies it, else the device string.
	GPU        string `json:"gpu"`
	ORTVersion string `json:"ort_version"`
	// Layers has one entry per graph node, at ProfileBatch.
	Layers       []LayerTime `json:"layers,omitempty"`
	ProfileBatch int         `json:"profile_batch,omitempty"`
	// UnattributedUs is kernel time ONNX Runtime spent in nodes it inserted (layout
	// reorders, casts) that belong to no layer; the median per run.
	UnattributedUs float64 `json:"unattributed_us,omitempty"`
	// ProfiledRunUs is the median whole-run time ONNX Runtime's profiler reported.
	ProfiledRunUs float64         `json:"profiled_run_us,omitempty"`
	Blocks        []formats.Block `json:"blocks"`
	// CutBytes[c-1] is the fp16 size at batch 1 of the tensors crossing the cut before block c.
	CutBytes     []int64       `json:"cut_bytes"`
	Measurements []Measurement `json:"measurements"`
}

// Entries turns the measurements into profile latency entries for GPU type gpu ("" = the
// result's GPU type: "cpu", or e.g. "L4" for cuda:0 on an L4).
func (r *Result) Entries(gpu string) []formats.LatencyEntry {
	if gpu == "" {
		gpu = r.GPU
	}
	out := make([]formats.LatencyEntry, 0, len(r.Measurements))
	for _, m := range r.Measurements {
		e := formats.LatencyEntry{GPU: gpu, VGPU: m.VGPU, Batch: m.Batch, TotalUs: round2(m.Total.MedianUs)}
		for _, s := range m.Blocks {
			e.BlockUs = append(e.BlockUs, round2(s.MedianUs))
			e.P90Us = append(e.P90Us, round2(s.P90Us))
			e.CV = append(e.CV, math.Round(s.CV*1e4)/1e4)
		}
		out = append(out, e)
	}
	return out
}

// LayerLatency returns the per-layer latency map a formats.Layer holds, keyed by gpu.
func (r *Result) LayerLatency(gpu string) []map[string]float64 {
	if gpu == "" {
		gpu = r.GPU
	}
	out := make([]map[string]float64, len(r.Layers))
	for i, l := range r.Layers {
		out[i] = map[string]float64{gpu: round2(l.Us)}
	}
	return out
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

// Available reports whether ONNX Runtime can be loaded (nil) or why not.
func Available() error {
	_, err := initORT()
	return err
}

// Version is the loaded ONNX Runtime's version ("" when unavailable).
func Version() string { return ortVersion() }

var deviceRE = regexp.MustCompile(`^cuda:(\d+)$`)

// ParseDevice splits a device name into its kind ("cpu" or "cuda") and ordinal.
func ParseDevice(device string) (kind string, id int, err error) {
	switch {
	case device == "" || device == "cpu":
		return "cpu", 0, nil
	case deviceRE.MatchString(device):
		id, _ := strconv.Atoi(deviceRE.FindStringSubmatch(device)[1])
		return "cuda", id, nil
	}
	return "", 0, fmt.Errorf("%w: unknown device %q: use cpu or cuda:N", ErrDevice, device)
}

// ioSpec declares one input or output of a session; negative dimensions are the batch.
type ioSpec struct {
	name  string
	shape []int64
	dtype onnx.DataType
	// value, for integer tensors computed from shapes, gives their content at a batch size.
	value func(batch int64) ([]int64, bool)
}

type sessionSpec struct {
	what          string // for error messages
	model         []byte
	inputs        []ioSpec
	outputs       []ioSpec
	device        string
	trt           bool
	threads       int
	profilePrefix string
	seed          int64
}

// session is one ONNX Runtime session with bound input and output tensors.
type session interface {
	bind(batch int) error
	run() error
	close() error
}

func (o *Options) defaults() error {
	if len(o.Model) == 0 {
		return errors.New("measure: no model")
	}
	if o.Batches == nil {
		o.Batches = []int{1}
	}
	if o.VGPU == nil {
		o.VGPU = []int{1}
	}
	if o.Device == "" {
		o.Device = "cpu"
	}
	if o.Warmup <= 0 {
		o.Warmup = 3
	}
	if o.MinRepeats <= 0 {
		o.MinRepeats = 10
	}
	if o.MaxRepeats < o.MinRepeats {
		o.MaxRepeats = max(200, o.MinRepeats)
	}
	if o.MaxTime <= 0 {
		o.MaxTime = 10 * time.Second
	}
	for _, b := range o.Batches {
		if b <= 0 {
			return fmt.Errorf("measure: batch %d: must be positive", b)
		}
	}
	for _, v := range o.VGPU {
		if v <= 0 || v > 16 {
			return fmt.Errorf("measure: vGPU level %d: must be in 1..16", v)
		}
	}
	_, _, err := ParseDevice(o.Device)
	return err
}

// Run measures the model. It fails early, before any timing, when ONNX Runtime or the
// device is unavailable.
func Run(ctx context.Context, opts Options) (*Result, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	m, err := onnx.Parse(opts.Model)
	if err != nil {
		return nil, err
	}
	if ext := m.ExternalData(); len(ext) > 0 {
		return nil, fmt.Errorf("measure: %d initializers (%q...) keep their data in external files, which the measured backend does not load: save the model with its weights inside the .onnx file", len(ext), ext[0])
	}
	g := opts.Graph
	var shape []int64
	if g != nil && len(g.Inputs) > 0 {
		shape = g.Tensors[g.Inputs[0]].Shape
	}
	mg, err := m.Graph(shape)
	if err != nil {
		return nil, err
	}
	if g == nil {
		g = mg
	}
	if len(g.Nodes) != len(m.Nodes) {
		return nil, fmt.Errorf("measure: the graph has %d nodes, the model %d: pass the graph of this model", len(g.Nodes), len(m.Nodes))
	}
	blocks := opts.Blocks
	if blocks == nil {
		blocks = []formats.Block{{FirstLayer: 0, EndLayer: len(g.Nodes)}}
	}
	for i, b := range blocks {
		if b.FirstLayer < 0 || b.EndLayer > len(g.Nodes) || b.FirstLayer >= b.EndLayer {
			return nil, fmt.Errorf("measure: block %d [%d, %d): not a non-empty range of the %d layers", i, b.FirstLayer, b.EndLayer, len(g.Nodes))
		}
		if i > 0 && b.FirstLayer != blocks[i-1].EndLayer {
			return nil, fmt.Errorf("measure: block %d starts at %d, block %d ends at %d: blocks must be contiguous", i, b.FirstLayer, i-1, blocks[i-1].EndLayer)
		}
	}
	// A model exported with a fixed batch cannot run at other batch sizes.
	for _, in := range m.Inputs {
		if len(in.Dims) == 0 || !in.Dims[0].Known() {
			continue
		}
		for _, b := range opts.Batches {
			if int64(b) != in.Dims[0].Value {
				return nil, fmt.Errorf("measure: input %q has a fixed batch size of %d, so batch %d cannot be measured: export the model with a dynamic batch dimension (or measure --batch %d only)", in.Name, in.Dims[0].Value, b, in.Dims[0].Value)
			}
		}
	}
	if _, err := initORT(); err != nil {
		return nil, err
	}
	res := &Result{Device: opts.Device, GPU: DeviceType(opts.Device), ORTVersion: ortVersion(), Blocks: blocks}
	var cuts []int
	for _, b := range blocks[1:] {
		cuts = append(cuts, b.FirstLayer)
	}
	if res.CutBytes, err = graph.CutBytes(g, cuts); err != nil {
		return nil, err
	}
	if res.CutBytes == nil {
		res.CutBytes = []int64{}
	}

	// Sessions: one per block per vGPU slice, plus the whole model.
	whole, err := specFor(m, 0, len(m.Nodes), opts.Model, opts, "the whole model")
	if err != nil {
		return nil, err
	}
	specs := make([]sessionSpec, len(blocks))
	for i, b := range blocks {
		data := opts.Model
		if len(blocks) > 1 {
			if data, err = onnx.Subgraph(m, b.FirstLayer, b.EndLayer); err != nil {
				return nil, fmt.Errorf("measure: block %d: %w", i, err)
			}
		}
		if specs[i], err = specFor(m, b.FirstLayer, b.EndLayer, data, opts, fmt.Sprintf("block %d [%d, %d)", i, b.FirstLayer, b.EndLayer)); err != nil {
			return nil, err
		}
	}
	total := len(opts.VGPU) * len(opts.Batches) * (len(blocks) + 1)
	if !opts.SkipLayers {
		total++
	}
	done := 0
	step := func() {
		done++
		if opts.Progress != nil {
			opts.Progress(done, total)
		}
	}
	if !opts.SkipLayers {
		if err := profileLayers(ctx, res, g, whole, opts); err != nil {
			return nil, err
		}
		step()
	}
	all := append([]sessionSpec{whole}, specs...)
	for _, v := range opts.VGPU {
		stats, err := timeAll(ctx, all, v, opts, func() {
			for range all {
				step()
			}
		})
		if err != nil {
			return nil, err
		}
		for bi, batch := range opts.Batches {
			res.Measurements = append(res.Measurements, Measurement{VGPU: v, Batch: batch, Total: stats[bi][0], Blocks: stats[bi][1:]})
		}
	}
	return res, nil
}

// specFor declares the session of nodes [first, end) of m.
func specFor(m *onnx.Model, first, end int, data []byte, opts Options, what string) (sessionSpec, error) {
	ins, outs, err := onnx.BlockIO(m, first, end)
	if err != nil {
		return sessionSpec{}, err
	}
	spec := sessionSpec{what: what, model: data, device: opts.Device, trt: opts.TRT, threads: opts.Threads, seed: opts.Seed}
	decl := func(names []string) ([]ioSpec, error) {
		var out []ioSpec
		for _, n := range names {
			shape, dt, ok := m.BatchedShape(n)
			if !ok {
				return nil, fmt.Errorf("measure: %s: tensor %q has no inferred shape", what, n)
			}
			io := ioSpec{name: n, shape: shape, dtype: dt}
			if _, ok := m.ShapeValue(n, 1); ok {
				io.value = func(b int64) ([]int64, bool) { return m.ShapeValue(n, b) }
			}
			out = append(out, io)
		}
		return out, nil
	}
	if spec.inputs, err = decl(ins); err != nil {
		return spec, err
	}
	if spec.outputs, err = decl(outs); err != nil {
		return spec, err
	}
	return spec, nil
}

// timeAll opens v sessions of every spec and times them at every batch. The specs are timed
// in interleaved rounds (each round runs every spec once, in a rotating order) rather than one
// after the other, so a change in machine load while measuring hits all of them alike and the
// block sums stay comparable with the whole-model time. It returns stats[batch][spec].
func timeAll(ctx context.Context, specs []sessionSpec, v int, opts Options, batchDone func()) ([][]Stats, error) {
	sessions := make([][]session, len(specs))
	defer func() {
		for _, ss := range sessions {
			for _, s := range ss {
				s.close()
			}
		}
	}()
	for i, spec := range specs {
		for k := 0; k < v; k++ {
			sp := spec
			sp.seed = spec.seed + int64(k)
			s, err := newSession(sp)
			if err != nil {
				return nil, err
			}
			sessions[i] = append(sessions[i], s)
		}
	}
	out := make([][]Stats, len(opts.Batches))
	for bi, batch := range opts.Batches {
		for _, ss := range sessions {
			for _, s := range ss {
				if err := s.bind(batch); err != nil {
					return nil, err
				}
			}
		}
		samples, err := repeat(ctx, sessions, opts)
		if err != nil {
			return nil, err
		}
		out[bi] = make([]Stats, len(specs))
		for i := range specs {
			out[bi][i] = summarize(samples[i])
		}
		batchDone()
	}
	return out, nil
}

// runConcurrently runs a group of sessions (the v slices of one vGPU level) at once and
// returns each one's latency in µs.
func runConcurrently(group []session) ([]float64, error) {
	if len(group) == 1 {
		t0 := time.Now()
		if err := group[0].run(); err != nil {
			return nil, err
		}
		return []float64{float64(time.Since(t0).Nanoseconds()) / 1e3}, nil
	}
	times := make([]float64, len(group))
	errs := make([]error, len(group))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for k, s := range group {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			t0 := time.Now()
			errs[k] = s.run()
			times[k] = float64(time.Since(t0).Nanoseconds()) / 1e3
		}()
	}
	close(start)
	wg.Wait()
	return times, errors.Join(errs...)
}

// repeat runs rounds over all session groups (warm-up first) and returns the samples of each
// group. It stops once every group's median moved less than 1% between two checks (made
// every MinRepeats/2 rounds past MinRepeats), at MaxRepeats rounds, or when MaxTime is spent.
func repeat(ctx context.Context, groups [][]session, opts Options) ([][]float64, error) {
	samples := make([][]float64, len(groups))
	round := func(r int, record bool) error {
		for j := range groups {
			i := (j + r) % len(groups) // rotate so no group always runs right after another
			ts, err := runConcurrently(groups[i])
			if err != nil {
				return err
			}
			if record {
				samples[i] = append(samples[i], ts...)
			}
		}
		return nil
	}
	for w := 0; w < opts.Warmup; w++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := round(w, false); err != nil {
			return nil, err
		}
	}
	began := time.Now()
	prev := make([]float64, len(groups))
	for n := 1; n <= opts.MaxRepeats; n++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := round(n, true); err != nil {
			return nil, err
		}
		if n < opts.MinRepeats {
			continue
		}
		if time.Since(began) > opts.MaxTime {
			break
		}
		if k := max(opts.MinRepeats/2, 1); (n-opts.MinRepeats)%k == 0 {
			stable := true
			for i := range groups {
				med := quantile.Of(samples[i], 50)
				if prev[i] <= 0 || math.Abs(med-prev[i]) > stableRel*prev[i] {
					stable = false
				}
				prev[i] = med
			}
			if stable {
				break
			}
		}
	}
	return samples, nil
}

func summarize(xs []float64) Stats {
	st := Stats{MedianUs: quantile.Of(xs, 50), P90Us: quantile.Of(xs, 90), MinUs: quantile.Of(xs, 0), Repeats: len(xs)}
	var mean float64
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	var vr float64
	for _, x := range xs {
		vr += (x - mean) * (x - mean)
	}
	if len(xs) > 1 && mean > 0 {
		st.CV = math.Sqrt(vr/float64(len(xs)-1)) / mean
	}
	return st
}

// traceHook, when set (by tests regenerating fixtures), receives every raw trace.
var traceHook func([]byte)

// profileLayers runs the whole model with ONNX Runtime's profiler on and maps the kernel
// times to the graph's layers.
func profileLayers(ctx context.Context, res *Result, g *graph.Graph, whole sessionSpec, opts Options) error {
	dir, err := os.MkdirTemp("", "plan-ort-profile-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	spec := whole
	spec.profilePrefix = filepath.Join(dir, "profile")
	s, err := newSession(spec)
	if err != nil {
		return err
	}
	batch := opts.Batches[0]
	runs := max(opts.MinRepeats, 5)
	err = s.bind(batch)
	for i := 0; err == nil && i < opts.Warmup+runs; i++ {
		if err = ctx.Err(); err == nil {
			err = s.run()
		}
	}
	// Closing the session makes ONNX Runtime write the trace.
	if cerr := s.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	files, _ := filepath.Glob(spec.profilePrefix + "*.json")
	if len(files) != 1 {
		return fmt.Errorf("measure: ONNX Runtime wrote %d profile files, want 1", len(files))
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		return err
	}
	if traceHook != nil {
		traceHook(data)
	}
	tr, err := ParseTrace(data)
	if err != nil {
		return err
	}
	res.Layers, res.UnattributedUs, res.ProfiledRunUs = tr.Attribute(g, opts.Warmup)
	res.ProfileBatch = batch
	return nil
}

// stableRel is how far a group's median latency may move between two checks for the
// measurement to count as settled: 1% is below the differences a plan acts on (a batch size
// or GPU choice moves latency by more) and above the run-to-run jitter of a quiet machine,
// so measuring stops once more repeats would no longer change the profile.
const stableRel = 0.01
