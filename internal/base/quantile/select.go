package quantile

import (
	"cmp"
	"math/bits"
	"slices"
)

// Select reorders xs in place so that xs[k], for every rank k in ks (0-based, out-of-range
// ones ignored), is the value sorting xs would put there (slices.Sort's order), with every
// element before it no greater and every one after it no smaller. Percentile then reads the
// same values from xs as from a sorted copy, when ks holds what AppendRanks names.
//
// A report asks for a few percentiles of up to millions of samples: selection takes
// expected O(n·log(len(ks))) comparisons against sorting's O(n·log n), and the few ranks
// wanted are what the percentiles need (numpy's linear interpolation reads two adjacent
// order statistics). It is quickselect over all the ranks at once (Hoare's FIND, extended to
// several ranks), with a partition that splits repeated values evenly (latencies in µs
// repeat a lot), and a fallback to sorting the range if partitioning goes badly (so
// O(n log n) at worst).
//
// Floats: NaNs order first as in slices.Sort; −0 and +0 compare equal, so which of them
// lands at a rank may differ from a sort's (their percentiles differ in sign only).
func Select[T cmp.Ordered](xs []T, ks []int) {
	want := make([]int, 0, len(ks))
	for _, k := range ks {
		if k >= 0 && k < len(xs) {
			want = append(want, k)
		}
	}
	slices.Sort(want)
	want = slices.Compact(want)
	if len(want) == 0 {
		return
	}
	selectRanks(xs, 0, want, 2*bits.Len(uint(len(xs))))
}

// selectRanks places the ranks ks (sorted, within [off, off+len(xs)), as ranks of the
// whole slice) of xs, a window of it starting at off. depth bounds the partitions left
// before the window is sorted instead.
func selectRanks[T cmp.Ordered](xs []T, off int, ks []int, depth int) {
	for len(ks) > 0 {
		if len(xs) <= 16 || depth == 0 {
			slices.Sort(xs)
			return
		}
		depth--
		m := partition(xs)
		i, _ := slices.BinarySearch(ks, off+m)
		left, right := ks[:i], ks[i:]
		if len(left) <= len(right) {
			selectRanks(xs[:m], off, left, depth)
			xs, off, ks = xs[m:], off+m, right
		} else {
			selectRanks(xs[m:], off+m, right, depth)
			xs, ks = xs[:m], left
		}
	}
}

// partition reorders xs (len ≥ 3) around a pivot into xs[:m], no greater than it, and
// xs[m:], no smaller, both non-empty (Hoare's scheme: the scans stop on elements equal to
// the pivot, so repeated values split evenly instead of piling up on one side).
func partition[T cmp.Ordered](xs []T) int {
	k := pivot(xs)
	xs[0], xs[k] = xs[k], xs[0]
	p := xs[0]
	i, j := -1, len(xs)
	for {
		for i++; cmp.Less(xs[i], p); i++ {
		}
		for j--; cmp.Less(p, xs[j]); j-- {
		}
		if i >= j {
			return j + 1
		}
		xs[i], xs[j] = xs[j], xs[i]
	}
}

// pivot is the index of the median of three elements of xs (len ≥ 3), or of Tukey's
// ninther for a long one.
func pivot[T cmp.Ordered](xs []T) int {
	n := len(xs)
	a, b, c := 0, n/2, n-1
	if n >= 128 {
		s := n / 8
		a = median3(xs, a, a+s, a+2*s)
		b = median3(xs, b-s, b, b+s)
		c = median3(xs, c-2*s, c-s, c)
	}
	return median3(xs, a, b, c)
}

// median3 is the index of the median of xs[a], xs[b] and xs[c].
func median3[T cmp.Ordered](xs []T, a, b, c int) int {
	if cmp.Less(xs[b], xs[a]) {
		a, b = b, a
	}
	if cmp.Less(xs[c], xs[b]) {
		b = c
		if cmp.Less(xs[b], xs[a]) {
			b = a
		}
	}
	return b
}
