package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
)

// The hot list: the functions that run long enough to be worth gcc's -O3. A solve spends its
// time in a few hundred of highs.wasm's 8,484 functions; the rest (reading models, options,
// presolve rules, the interior-point and QP solvers, error paths) barely run, yet they are
// most of the C, and -O3 compiles each part in 46 s against -O1's 20 s (2-core VM). With a
// list, w2cgen puts the listed functions in the first hotParts parts and the rest in the
// others, and the Makefile compiles the two kinds with their own flags (NATIVE_CFLAGS,
// NATIVE_COLD_CFLAGS). Floating point rounds the same at every -O level (-ffp-contract=off,
// no -ffast-math), so the split changes how fast a function runs, never what it computes.
//
// The list is a measurement (scripts/native-hot.sh): the functions a profile of the engine
// at -O1 without inlining sampled, less the coldest by samples per byte up to a share of the
// samples. It names functions by wasm2c's index, which only holds for one wasm, so its first
// line names that wasm's sha256 and a list for another is refused.

// hotHeader starts a hot list's first line; the wasm's sha256 follows it.
const hotHeader = "# highs.wasm sha256 "

var (
	// fnNameRe finds the function's name in its definition's first line.
	fnNameRe = regexp.MustCompile(`\bw2c_\w+\(`)
	// hotNameRe is a hot list's line.
	hotNameRe = regexp.MustCompile(`^w2c_\w+$`)
)

// readHotList reads the hot list at path for the wasm whose sha256 is sha: one function name
// (w2c_fN) a line, '#' lines comments.
func readHotList(path, sha string) (map[string]bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	hot := map[string]bool{}
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		switch {
		case n == 1:
			got, ok := strings.CutPrefix(l, hotHeader)
			if !ok {
				return nil, fmt.Errorf("%s:1: want %q and the wasm's sha256, got %q", path, hotHeader, l)
			}
			if got != sha {
				return nil, fmt.Errorf("%s is for highs.wasm %s, this is %s: run scripts/native-hot.sh", path, got, sha)
			}
		case l == "" || strings.HasPrefix(l, "#"):
		case !hotNameRe.MatchString(l):
			return nil, fmt.Errorf("%s:%d: %q is no function name (w2c_fN)", path, n, l)
		default:
			hot[l] = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(hot) == 0 {
		return nil, fmt.Errorf("%s: no functions listed", path)
	}
	return hot, nil
}

// fnName is the name a function definition's first line gives it ("" if none).
func fnName(first string) string {
	m := fnNameRe.FindString(first)
	return strings.TrimSuffix(m, "(")
}

// assignParts gives each function body its part: without a hot list (hot nil), parts parts
// of about equal size in wasm2c's order; with one, the listed functions in parts
// 0..hotParts-1 and the others in hotParts..parts-1, each kind in equal sizes and wasm2c's
// order. Every listed name must be defined.
func assignParts(bodies [][]string, parts int, hot map[string]bool, hotParts int) ([]int, error) {
	part := make([]int, len(bodies))
	if hot == nil {
		fill(bodies, nil, part, 0, parts)
		return part, nil
	}
	if hotParts < 1 || hotParts >= parts {
		return nil, fmt.Errorf("-hot-parts %d: want 1..%d (-parts %d leaves the rest to the cold functions)", hotParts, parts-1, parts)
	}
	isHot := make([]bool, len(bodies))
	defined := map[string]bool{}
	for i, b := range bodies {
		name := fnName(b[0])
		defined[name], isHot[i] = true, hot[name]
	}
	var missing []string
	for name := range hot {
		if !defined[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return nil, fmt.Errorf("the hot list names %d functions the wasm does not define: %s", len(missing), strings.Join(missing[:min(5, len(missing))], ", "))
	}
	fill(bodies, isHot, part, 0, hotParts)
	for i := range isHot {
		isHot[i] = !isHot[i]
	}
	fill(bodies, isHot, part, hotParts, parts-hotParts)
	return part, nil
}

// fill spreads the bodies picked (every one where pick is nil) over parts first..first+n-1 in
// order, about equal in size.
func fill(bodies [][]string, pick []bool, part []int, first, n int) {
	size := func(b []string) int {
		s := 0
		for _, l := range b {
			s += len(l) + 1
		}
		return s
	}
	total := 0
	for i, b := range bodies {
		if pick == nil || pick[i] {
			total += size(b)
		}
	}
	k, done := 0, 0
	for i, b := range bodies {
		if pick != nil && !pick[i] {
			continue
		}
		part[i] = first + k
		done += size(b)
		if k < n-1 && done >= (k+1)*total/n {
			k++
		}
	}
}
