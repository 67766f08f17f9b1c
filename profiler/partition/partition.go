// Package partition pre-partitions a model's layers (in topological order) into at most N
// contiguous blocks, the unit PPipe's planner cuts at (PPipe §5.2). Two methods:
//
//   - greedy: the paper's equal-runtime grouping on one reference GPU type;
//   - min-traffic: the variant the authors' artifact used for its reference plans — exactly N
//     blocks minimizing the bytes crossing the N−1 cuts, subject to every block's latency lying
//     within [lb, ub]·total/N on every GPU type, relaxing (lb, ub) along a fixed ladder until
//     feasible. Solved exactly by dynamic programming over (blocks placed, last cut).
package partition

import (
	"errors"
	"fmt"
	"math"

	"github.com/plan-dev/plan/formats"
)

// Method names a pre-partitioning method.
type Method string

// Methods.
const (
	Greedy     Method = "greedy"
	MinTraffic Method = "min-traffic"
)

// ParseMethod accepts "greedy" or "min-traffic".
func ParseMethod(s string) (Method, error) {
	switch Method(s) {
	case Greedy, MinTraffic:
		return Method(s), nil
	}
	return "", fmt.Errorf("partition method %q: must be greedy or min-traffic", s)
}

// Ladder is the sequence of (lb, ub) balance bounds min-traffic tries, tightest first
// (the authors' artifact's ladder; most models are feasible at (0.5, 1.5)).
var Ladder = [][2]float64{
	{0.7, 1.3}, {0.5, 1.5}, {0.5, 2.0}, {0.5, 2.5}, {0.5, 3.0}, {0.5, 3.5}, {0.5, 4.0}, {0.4, 4.0},
}

// Input is what pre-partitioning needs to know about a model.
type Input struct {
	// GPUs names the rows of Latency.
	GPUs []string
	// Latency[k][q] is layer q's latency on GPU type k at the reference batch, µs (≥ 0).
	Latency [][]float64
	// Cuts[p] is the fp16 bytes crossing position p (between layer p−1 and p), p = 0..layers.
	Cuts []int64
	// ParamBytes[q] is layer q's weight size (optional; fills Block.MemoryBytes).
	ParamBytes []int64
	// Blocks is the requested N (default 10).
	Blocks int
	// Reference is the index in GPUs of the reference type for greedy (default 0).
	Reference int
}

// Result is a partition.
type Result struct {
	Blocks []formats.Block
	// CutBytes[c-1] is the size of cut c (between block c−1 and c); len = len(Blocks)−1.
	CutBytes []int64
	Info     formats.PartitionInfo
}

// ErrNoPartition is returned by MinTrafficBounds when no partition meets the bounds.
var ErrNoPartition = errors.New("no partition meets the balance bounds")

func (in *Input) check() (layers int, err error) {
	if len(in.Latency) == 0 || len(in.Latency) != len(in.GPUs) {
		return 0, fmt.Errorf("partition: need one latency row per GPU type (%d rows, %d GPUs)", len(in.Latency), len(in.GPUs))
	}
	layers = len(in.Latency[0])
	if layers == 0 {
		return 0, errors.New("partition: model has no layers")
	}
	for k, row := range in.Latency {
		if len(row) != layers {
			return 0, fmt.Errorf("partition: GPU %s: %d layer latencies, want %d", in.GPUs[k], len(row), layers)
		}
		for q, v := range row {
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, fmt.Errorf("partition: GPU %s: layer %d: latency %v: must be finite and >= 0", in.GPUs[k], q, v)
			}
		}
	}
	if len(in.Cuts) != layers+1 {
		return 0, fmt.Errorf("partition: %d cut sizes, want layers+1 = %d", len(in.Cuts), layers+1)
	}
	if in.ParamBytes != nil && len(in.ParamBytes) != layers {
		return 0, fmt.Errorf("partition: %d param sizes, want %d", len(in.ParamBytes), layers)
	}
	if in.Reference < 0 || in.Reference >= len(in.GPUs) {
		return 0, fmt.Errorf("partition: reference GPU index %d out of range", in.Reference)
	}
	if in.Blocks < 0 {
		return 0, fmt.Errorf("partition: blocks %d: must be >= 1", in.Blocks)
	}
	return layers, nil
}

// Run partitions with the given method.
func Run(in Input, m Method) (*Result, error) {
	if _, err := in.check(); err != nil {
		return nil, err
	}
	n := in.Blocks
	if n == 0 {
		n = 10
	}
	info := formats.PartitionInfo{Method: string(m), Blocks: n}
	var bounds []int
	switch m {
	case Greedy:
		bounds = GreedyBounds(in.Latency[in.Reference], n)
		info.ReferenceGPU = in.GPUs[in.Reference]
	case MinTraffic:
		var err error
		bounds, info.LowerBound, info.UpperBound, err = minTrafficLadder(in.Latency, in.Cuts, n)
		if errors.Is(err, ErrNoPartition) {
			// Even the loosest bounds fail (a few layers dominate the model): fall back
			// to the paper's greedy grouping, which tolerates single huge layers.
			bounds = GreedyBounds(in.Latency[in.Reference], n)
			info = formats.PartitionInfo{Method: string(Greedy), Blocks: n, ReferenceGPU: in.GPUs[in.Reference]}
		} else if err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("partition method %q: must be greedy or min-traffic", m)
	}
	return assemble(in, bounds, info), nil
}

// assemble turns boundary positions (0 = b0 < b1 < ... < bM = layers) into a Result.
func assemble(in Input, bounds []int, info formats.PartitionInfo) *Result {
	r := &Result{Info: info}
	for i := 0; i+1 < len(bounds); i++ {
		b := formats.Block{FirstLayer: bounds[i], EndLayer: bounds[i+1]}
		for q := b.FirstLayer; q < b.EndLayer && in.ParamBytes != nil; q++ {
			b.MemoryBytes += in.ParamBytes[q]
		}
		r.Blocks = append(r.Blocks, b)
		if i > 0 {
			r.CutBytes = append(r.CutBytes, in.Cuts[bounds[i]])
		}
	}
	if r.CutBytes == nil {
		r.CutBytes = []int64{}
	}
	return r
}

// GreedyBounds is the paper's equal-runtime grouping: with target τ = total/n, walk the layers
// accumulating latency and close the block when adding the next layer would leave the sum
// farther from τ than stopping now; the n-th block takes the remainder. A layer longer than
// τ ends up alone, so fewer than n blocks may result. It returns block boundaries.
func GreedyBounds(lat []float64, n int) []int {
	var total float64
	for _, v := range lat {
		total += v
	}
	tau := total / float64(n)
	bounds := []int{0}
	var acc float64
	for q, v := range lat {
		if q > 0 && len(bounds) < n && math.Abs(acc+v-tau) > math.Abs(acc-tau) {
			bounds = append(bounds, q)
			acc = 0
		}
		acc += v
	}
	return append(bounds, len(lat))
}

func minTrafficLadder(lat [][]float64, cuts []int64, n int) ([]int, float64, float64, error) {
	for _, lu := range Ladder {
		b, err := MinTrafficBounds(lat, cuts, n, lu[0], lu[1])
		if err == nil {
			return b, lu[0], lu[1], nil
		}
		if !errors.Is(err, ErrNoPartition) {
			return nil, 0, 0, err
		}
	}
	return nil, 0, 0, ErrNoPartition
}

// MinTrafficBounds returns the boundaries of exactly min(n, layers) contiguous blocks that
// minimize the sum of Cuts over the inner boundaries, with every block's latency on every GPU
// type k within [lb, ub]·total_k/n. Exact DP: best[j][p] = cheapest way to cover layers
// [0, p) with j blocks; O(n·layers²·K) in the worst case, pruned by the monotone upper bound.
// Ties go to the earliest cut positions, so the result is deterministic.
func MinTrafficBounds(lat [][]float64, cuts []int64, n int, lb, ub float64) ([]int, error) {
	layers := len(lat[0])
	if n > layers {
		n = layers
	}
	K := len(lat)
	prefix := make([][]float64, K)
	lo := make([]float64, K)
	hi := make([]float64, K)
	for k := range lat {
		prefix[k] = make([]float64, layers+1)
		for q, v := range lat[k] {
			prefix[k][q+1] = prefix[k][q] + v
		}
		target := prefix[k][layers] / float64(n)
		// A tiny slack absorbs floating-point error in the prefix sums.
		eps := relTol * prefix[k][layers]
		lo[k], hi[k] = lb*target-eps, ub*target+eps
	}
	const inf = math.MaxInt64
	best := make([][]int64, n+1)
	from := make([][]int, n+1)
	for j := range best {
		best[j] = make([]int64, layers+1)
		from[j] = make([]int, layers+1)
		for p := range best[j] {
			best[j][p] = inf
			from[j][p] = -1
		}
	}
	best[0][0] = 0
	for j := 1; j <= n; j++ {
		for p := j - 1; p < layers; p++ {
			if best[j-1][p] == inf {
				continue
			}
			base := best[j-1][p]
			if j > 1 {
				base += cuts[p]
			}
		next:
			for q := p + 1; q <= layers; q++ {
				for k := 0; k < K; k++ {
					s := prefix[k][q] - prefix[k][p]
					if s > hi[k] {
						break next // latencies are >= 0, so longer blocks only grow
					}
					if s < lo[k] {
						continue next
					}
				}
				if base < best[j][q] {
					best[j][q] = base
					from[j][q] = p
				}
			}
		}
	}
	if best[n][layers] == inf {
		return nil, fmt.Errorf("%w: (%.1f, %.1f) with %d blocks", ErrNoPartition, lb, ub, n)
	}
	bounds := make([]int, n+1)
	p := layers
	for j := n; j >= 0; j-- {
		bounds[j] = p
		if j > 0 {
			p = from[j][p]
		}
	}
	return bounds, nil
}
