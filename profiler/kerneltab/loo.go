package kerneltab

import (
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/plan-dev/plan/internal/base/quantile"
)

// LOOStats is how well interpolation predicts measured points it was not given
// (leave-one-out): each measured node is hidden in turn and predicted from the rest of its
// grid — its nearest measured neighbours on every axis, twice the spacing a query between
// grid points sees, so the figure bounds the interpolation error from above.
type LOOStats struct {
	GPU, Table string
	// Points is how many nodes were predicted; Missed how many had no measured neighbour.
	Points, Missed int
	// MedianPct, P90Pct and MaxPct are the absolute relative errors, %.
	MedianPct, P90Pct, MaxPct float64
}

// LeaveOneOut predicts every stride-th measured node of table (stride 1: all of them) from
// its grid with the node hidden. It hides each node in the shared grid in turn, so it must
// not run beside other users of t (tests and benchmarks only). filter, when not nil, keeps the nodes whose slice and axis
// values it accepts (e.g. shapes that LLMs run).
func (t *Tables) LeaveOneOut(table string, stride int, filter func(slice string, x []float64) bool) LOOStats {
	st := LOOStats{GPU: t.GPU, Table: table}
	var errs []float64
	keys := t.sliceKeys(table)
	seen := 0
	for _, s := range keys {
		g := t.slices[table+"/"+s]
		x := make([]float64, len(g.axes))
		for at, v := range g.vals {
			if math.IsNaN(v) {
				continue
			}
			rem := at
			for i := range g.axes {
				x[i] = g.axes[i][rem/g.stride[i]]
				rem %= g.stride[i]
			}
			if filter != nil && !filter(s, x) {
				continue
			}
			seen++
			if stride > 1 && seen%stride != 0 {
				continue
			}
			g.vals[at] = math.NaN()
			p, ok := g.at(x)
			g.vals[at] = v
			st.Points++
			if !ok {
				st.Missed++
				continue
			}
			errs = append(errs, math.Abs(p-v)/v*100)
		}
	}
	if len(errs) == 0 {
		return st
	}
	sort.Float64s(errs)
	// Nearest rank: the error band names errors a measured point really had.
	st.MedianPct = quantile.NearestRank(errs, 50)
	st.P90Pct = quantile.NearestRank(errs, 90)
	st.MaxPct = errs[len(errs)-1]
	return st
}

// LLMShapes keeps the nodes a dense decoder's step runs on one GPU of a tensor-parallel
// group (the filter LeaveOneOut takes): GEMMs with n and k of at least 128 and m up to
// 16,384; attention with head size 64–256; collectives from 1,024 elements. The tables
// also span toy shapes (n = 32) whose microsecond kernels no step is made of.
func LLMShapes(table string) func(slice string, x []float64) bool {
	return func(slice string, x []float64) bool {
		switch table {
		case TableGEMM:
			return x[0] <= 16384 && x[1] >= 128 && x[2] >= 128
		case TableContextAttn, TableGenAttn:
			hd, _, _ := strings.Cut(slice, "/")
			return slices.Contains([]string{"64", "128", "256"}, hd)
		case TableAllReduce, TableNCCL:
			return x[1] >= 1024
		}
		return true
	}
}
