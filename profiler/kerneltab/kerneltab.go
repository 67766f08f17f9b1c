// Package kerneltab is the LLM step model's measured kernel times: NVIDIA's published
// per-operation vLLM measurements (AIConfigurator's tables, Apache-2.0; data/NOTICE.md) for
// the H100, H200, B200, A100 and L40S, embedded as the compact subset the dense step model
// reads (scripts/derive-kernel-tables.sh derives it from ../shared/data/kernels), and
// interpolation in each table's own dimensions: GEMM by (m, n, k, dtype), prefill and decode
// attention by (batch, length, heads, KV heads, head size, KV dtype), vLLM's tensor-parallel
// all-reduce (custom kernel or its fallback, graph or eager) and NCCL collectives by
// (message size, GPUs), and vLLM's fused MoE layer by (tokens) per model shape and split,
// scaled between shapes. Every answer says which measured point it came from, so
// `plan profile --explain` can show it. LeaveOneOut measures how well the interpolation
// predicts a measured point it was not given.
package kerneltab

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"embed"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/plan-dev/plan/internal/base/gpucat"
	"github.com/plan-dev/plan/profiler/gpus"
)

//go:embed data/*.csv.gz
var data embed.FS

// GPUs lists the GPU types with measured tables (the catalogue's KernelTable), sorted.
func GPUs() []string {
	var out []string
	for _, s := range gpucat.All() {
		if s.Measured() {
			out = append(out, s.Name)
		}
	}
	sort.Strings(out)
	return out
}

// system is the tables' system name of gpu (a catalogue name, case-insensitive; "" = not
// measured).
func system(gpu string) string {
	s, err := gpucat.Lookup(gpu)
	if err != nil {
		return ""
	}
	return s.KernelTable
}

// Has reports whether gpu (a profiler/gpus name, case-insensitive) has measured tables.
func Has(gpu string) bool { return system(gpu) != "" }

// Tables are one GPU's measured kernel times.
type Tables struct {
	// GPU is the profiler/gpus name, System the tables' (h100_sxm, ...).
	GPU, System string
	slices      map[string]*grid // table/key → grid
	// moeSetAside are the MoE slices set aside as suspect (suspectMoESlices), found once.
	suspectOnce sync.Once
	moeSetAside map[string]SuspectSlice
	// outOfOrder are the measured points read at a faster point of more work (monotone).
	outOfOrder []OutOfOrder
	// gemmLaunch, moeLaunch and attnLaunch are the GEMM, MoE and decode-attention tables'
	// fastest points (fastestUs)
	// and spec the GPU's catalogue entry, found once.
	launchOnce sync.Once
	gemmLaunch float64
	moeLaunch  float64
	attnLaunch float64
	spec       gpus.Spec
	specOK     bool
	mxfp4MoE   bool // the MoE table measured MXFP4 kernels
}

// Table names, and the axes of their grids in order.
const (
	TableGEMM        = "gemm"                 // m, n, k
	TableContextAttn = "context_attention"    // batch_size, isl, num_heads, num_key_value_heads
	TableGenAttn     = "generation_attention" // batch_size, num_heads, num_key_value_heads, step
	TableAllReduce   = "custom_allreduce"     // num_gpus, message_size
	TableNCCL        = "nccl"                 // num_gpus, message_size
	TableMLAContext  = "mla_context"          // num_heads, batch_size, isl
	TableMLAGen      = "mla_generation"       // num_heads, batch_size, step
)

// optionalTables are measured on some GPUs only (DeepSeek's latent attention: not on the
// A100 in vLLM's module form).
var optionalTables = map[string]bool{TableMLAContext: true, TableMLAGen: true}

// tableSpec says how a derived file splits into grids: the columns that name a slice
// (categorical), the numeric axes and how latency grows past each axis's largest value.
type tableSpec struct {
	key  []string
	axes []string
	grow []float64
}

var specs = map[string]tableSpec{
	TableGEMM:        {key: []string{"gemm_dtype"}, axes: []string{"m", "n", "k"}, grow: []float64{1, 1, 1}},
	TableContextAttn: {key: []string{"head_dim", "kv_cache_dtype"}, axes: []string{"batch_size", "isl", "num_heads", "num_key_value_heads"}, grow: []float64{1, 2, 1, 0}},
	TableGenAttn:     {key: []string{"head_dim", "kv_cache_dtype"}, axes: []string{"batch_size", "num_heads", "num_key_value_heads", "step"}, grow: []float64{1, 0.5, 1, 1}},
	TableAllReduce:   {key: []string{"kernel_source"}, axes: []string{"num_gpus", "message_size"}, grow: []float64{1, 1}},
	TableNCCL:        {key: []string{"op_name"}, axes: []string{"num_gpus", "message_size"}, grow: []float64{1, 1}},
	TableMLAContext:  {key: []string{"gemm_type", "kv_cache_dtype"}, axes: []string{"num_heads", "batch_size", "isl"}, grow: []float64{1, 1, 2}},
	TableMLAGen:      {key: []string{"gemm_type", "kv_cache_dtype"}, axes: []string{"num_heads", "batch_size", "step"}, grow: []float64{1, 1, 1}},
	TableMoE:         {key: []string{"moe_dtype", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size"}, axes: []string{"num_tokens"}, grow: []float64{1}},
}

var (
	cacheMu sync.Mutex
	cache   = map[string]*Tables{}
)

// ErrNoTables is returned for a GPU without measured tables.
var ErrNoTables = fmt.Errorf("no measured kernel tables")

// Load returns gpu's tables (parsed once per process).
func Load(gpu string) (*Tables, error) {
	spec, _ := gpucat.Lookup(gpu)
	name, sys := spec.Name, spec.KernelTable
	if sys == "" {
		return nil, fmt.Errorf("GPU %q: %w (measured: %s)", gpu, ErrNoTables, strings.Join(GPUs(), ", "))
	}
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if t, ok := cache[name]; ok {
		return t, nil
	}
	t := &Tables{GPU: name, System: sys, slices: map[string]*grid{}}
	for _, table := range []string{TableGEMM, TableContextAttn, TableGenAttn, TableAllReduce, TableNCCL, TableMoE, TableMLAContext, TableMLAGen} {
		if optionalTables[table] {
			if _, err := data.ReadFile("data/" + sys + "__" + table + ".csv.gz"); err != nil {
				continue
			}
		}
		if err := t.read(table); err != nil {
			return nil, err
		}
	}
	cache[name] = t
	return t, nil
}

type row struct {
	key string
	x   []float64
	ms  float64
}

func (t *Tables) read(table string) error {
	file := "data/" + t.System + "__" + table + ".csv.gz"
	raw, err := data.ReadFile(file)
	if err != nil {
		return fmt.Errorf("kerneltab: %s: %v", file, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("kerneltab: %s: %v", file, err)
	}
	body, err := io.ReadAll(zr)
	if err != nil {
		return fmt.Errorf("kerneltab: %s: %v", file, err)
	}
	spec := specs[table]
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 4096), 1<<16)
	sc.Scan()
	col := map[string]int{}
	for i, h := range strings.Split(sc.Text(), ",") {
		col[h] = i
	}
	need := append(append(slices.Clone(spec.key), spec.axes...), "latency")
	for _, c := range need {
		if _, ok := col[c]; !ok {
			return fmt.Errorf("kerneltab: %s: no column %s", file, c)
		}
	}
	var rows []row
	for line := 2; sc.Scan(); line++ {
		f := strings.Split(sc.Text(), ",")
		if len(f) != len(col) {
			return fmt.Errorf("kerneltab: %s: line %d: %d fields, want %d", file, line, len(f), len(col))
		}
		r := row{x: make([]float64, len(spec.axes))}
		var kb []string
		for _, c := range spec.key {
			kb = append(kb, f[col[c]])
		}
		r.key = table + "/" + strings.Join(kb, "/")
		for i, c := range spec.axes {
			v, err := strconv.ParseFloat(f[col[c]], 64)
			if err != nil || !(v > 0) {
				return fmt.Errorf("kerneltab: %s: line %d: %s: %q: want a number > 0", file, line, c, f[col[c]])
			}
			r.x[i] = v
		}
		ms, err := strconv.ParseFloat(f[col["latency"]], 64)
		if err != nil || !(ms > 0) || math.IsInf(ms, 0) {
			return fmt.Errorf("kerneltab: %s: line %d: latency: %q: want a number > 0", file, line, f[col["latency"]])
		}
		r.ms = ms
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("kerneltab: %s: %v", file, err)
	}
	axes := map[string][]map[float64]bool{}
	for _, r := range rows {
		a := axes[r.key]
		if a == nil {
			a = make([]map[float64]bool, len(spec.axes))
			for i := range a {
				a[i] = map[float64]bool{}
			}
			axes[r.key] = a
		}
		for i, v := range r.x {
			a[i][v] = true
		}
	}
	for key, a := range axes {
		sorted := make([][]float64, len(a))
		for i, set := range a {
			for v := range set {
				sorted[i] = append(sorted[i], v)
			}
			slices.Sort(sorted[i])
		}
		t.slices[key] = newGrid(sorted, spec.grow)
	}
	for _, r := range rows {
		g := t.slices[r.key]
		at, _ := g.index(r.x)
		g.vals[at] = r.ms
	}
	if slices.Contains(floorTables, table) {
		for _, key := range t.sliceKeys(table) {
			t.outOfOrder = append(t.outOfOrder, t.slices[table+"/"+key].monotone(table, key)...)
		}
	}
	return nil
}

// Point is where a kernel time came from: the table, its slice (dtype, head size, ...), the
// query's coordinates in the table's axes, and whether it is a measured point or an
// interpolation between (or a growth past) measured points.
type Point struct {
	Table    string    `json:"table"`
	Slice    string    `json:"slice,omitempty"`
	Axes     []string  `json:"axes"`
	At       []float64 `json:"at"`
	Measured bool      `json:"measured"`
	// ScaledFrom is the measured slice a shape the tables lack was scaled from (MoEUs).
	ScaledFrom string `json:"scaled_from,omitempty"`
	// SetAside names the measured slice this answer did not use because its points sit
	// far above their physical floor (floor.go), and why.
	SetAside string `json:"set_aside,omitempty"`
}

// String is "gemm[bfloat16] m=128 n=6144 k=4096 (measured)".
func (p Point) String() string {
	var b strings.Builder
	b.WriteString(p.Table)
	if p.Slice != "" {
		b.WriteString("[" + p.Slice + "]")
	}
	for i, a := range p.Axes {
		v := p.At[i]
		if v == math.Trunc(v) && v < 1e15 {
			fmt.Fprintf(&b, " %s=%d", a, int64(v))
		} else {
			fmt.Fprintf(&b, " %s=%.1f", a, v)
		}
	}
	switch {
	case p.SetAside != "":
		b.WriteString(" (scaled from " + p.ScaledFrom + "; set aside " + p.SetAside + ")")
	case p.ScaledFrom != "":
		b.WriteString(" (scaled from " + p.ScaledFrom + ")")
	case p.Measured:
		b.WriteString(" (measured)")
	default:
		b.WriteString(" (interpolated)")
	}
	return b.String()
}

// lookup interpolates table's slice at x, in µs.
func (t *Tables) lookup(table, slice string, x []float64) (float64, Point, error) {
	p := Point{Table: table, Slice: slice, Axes: specs[table].axes, At: slices.Clone(x)}
	g, ok := t.slices[table+"/"+slice]
	if !ok {
		return 0, p, fmt.Errorf("%s %s: no %s slice %q", t.GPU, table, table, slice)
	}
	ms, ok := g.at(x)
	if !ok {
		return 0, p, fmt.Errorf("%s %s[%s]: no measured point near %s", t.GPU, table, slice, p)
	}
	if at, exact := g.index(x); exact && !math.IsNaN(g.vals[at]) {
		p.Measured = true
	}
	return ms * 1e3, p, nil
}

// sliceKeys lists the slices of table, sorted.
func (t *Tables) sliceKeys(table string) []string {
	var out []string
	for k := range t.slices {
		if s, ok := strings.CutPrefix(k, table+"/"); ok {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}
