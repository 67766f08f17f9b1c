package kerneltab

import (
	"math"
	"slices"
)

// grid is one measured table slice as a rectilinear grid: the sorted distinct values of
// each numeric axis and a latency (ms) per grid node, NaN where the table has no row
// (corner-truncated context grids, shapes whose kernel failed).
type grid struct {
	axes [][]float64
	// grow[i] is how latency grows past the largest measured value of axis i: as
	// (x/max)^grow[i] (1 for work linear in the axis, 2 for causal attention over the
	// prompt). Below the smallest value an axis is clamped: a smaller shape never costs
	// more than the smallest measured one, and never less than nothing.
	grow   []float64
	vals   []float64
	stride []int
}

func newGrid(axes [][]float64, grow []float64) *grid {
	g := &grid{axes: axes, grow: grow, stride: make([]int, len(axes))}
	n := 1
	for i := len(axes) - 1; i >= 0; i-- {
		g.stride[i] = n
		n *= len(axes[i])
	}
	g.vals = make([]float64, n)
	for i := range g.vals {
		g.vals[i] = math.NaN()
	}
	return g
}

// index is the node of exact axis values; false when a value is not on its axis.
func (g *grid) index(x []float64) (int, bool) {
	at := 0
	for i, v := range x {
		j, ok := slices.BinarySearch(g.axes[i], v)
		if !ok {
			return 0, false
		}
		at += j * g.stride[i]
	}
	return at, true
}

// maxSearch is how many grid steps the interpolation looks past a missing node on each
// side before giving up on that side.
const maxSearch = 3

// at interpolates the latency at x: multilinear in log(axis) and log(latency) — a power
// law between neighbouring measurements, which GEMM, attention and collective times follow
// piecewise — skipping missing nodes by taking the nearest measured one on each side. ok is
// false when no measured node is near.
func (g *grid) at(x []float64) (float64, bool) {
	lv, ok := g.logAt(0, 0, x)
	if !ok {
		return math.NaN(), false
	}
	return math.Exp(lv), true
}

func (g *grid) logAt(axis, base int, x []float64) (float64, bool) {
	if axis == len(g.axes) {
		v := g.vals[base]
		if math.IsNaN(v) || v <= 0 {
			return 0, false
		}
		return math.Log(v), true
	}
	a := g.axes[axis]
	xv := x[axis]
	scale := 0.0 // log factor for extrapolating past the largest value
	if top := a[len(a)-1]; xv > top {
		scale = g.grow[axis] * math.Log(xv/top)
		xv = top
	}
	xv = max(xv, a[0])
	hi, _ := slices.BinarySearch(a, xv) // first index with a[hi] >= xv
	lo := hi
	if a[hi] > xv {
		lo = hi - 1
	}
	sub := func(j int) (float64, bool) { return g.logAt(axis+1, base+j*g.stride[axis], x) }
	if lo == hi {
		if v, ok := sub(lo); ok {
			return v + scale, true
		}
		lo, hi = lo-1, hi+1 // a missing node: its neighbours
	}
	var lx, hx, lvv, hvv float64
	lok, hok := false, false
	for j := lo; j >= 0 && j > lo-maxSearch; j-- {
		if v, ok := sub(j); ok {
			lx, lvv, lok = a[j], v, true
			break
		}
	}
	for j := hi; j < len(a) && j < hi+maxSearch; j++ {
		if v, ok := sub(j); ok {
			hx, hvv, hok = a[j], v, true
			break
		}
	}
	switch {
	case lok && hok:
		t := (math.Log(xv) - math.Log(lx)) / (math.Log(hx) - math.Log(lx))
		return lvv + t*(hvv-lvv) + scale, true
	case lok: // nothing measured above: grow from the nearest below
		return lvv + g.grow[axis]*math.Log(xv/lx) + scale, true
	case hok: // nothing measured below: no shape costs more than a larger measured one
		return hvv + scale, true
	}
	return 0, false
}
