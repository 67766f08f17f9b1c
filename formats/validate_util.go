package formats

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Small helpers shared by the Validate methods. Each adds at most one FieldError.

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// notEmpty requires a non-empty string.
func notEmpty(v *validator, path, s string) bool {
	if s == "" {
		v.add(path, s, "must not be empty")
		return false
	}
	return true
}

// atLeast requires an integer >= lo.
func atLeast(v *validator, path string, x, lo int64) {
	if x < lo {
		v.add(path, x, "must be >= %d", lo)
	}
}

// inRange requires a finite number in [lo, hi].
func inRange(v *validator, path string, x, lo, hi float64) {
	if !finite(x) || x < lo || x > hi {
		v.add(path, x, "must be in [%g, %g]", lo, hi)
	}
}

// optionalPositive accepts 0 (meaning "not set") or a finite number > 0.
func optionalPositive(v *validator, path string, x float64) {
	if !finite(x) || x < 0 {
		v.add(path, x, "must be > 0 (or omitted)")
	}
}

// positiveDuration requires a duration > 0.
func positiveDuration(v *validator, path string, d Duration) {
	if d <= 0 {
		v.add(path, d, "must be > 0")
		return
	}
	boundedDuration(v, path, d)
}

// names tracks names that must be unique and non-empty; it reports the first path on a repeat.
type names map[string]string

func (n names) check(v *validator, path, name string) {
	if !notEmpty(v, path, name) {
		return
	}
	if first, dup := n[name]; dup {
		v.add(path, name, "duplicate name (first at %s)", first)
		return
	}
	n[name] = path
}

// vgpuLevel requires a vGPU level in 1..4.
func vgpuLevel(v *validator, path string, x int) {
	if x < 1 || x > 4 {
		v.add(path, x, "must be in 1..4")
	}
}

// nested adds the problems of an embedded document under a path prefix.
func (v *validator) nested(prefix string, errs ErrorList) {
	for _, e := range errs {
		c := *e
		if c.Path == "" {
			c.Path = prefix
		} else if strings.HasPrefix(c.Path, "[") {
			c.Path = prefix + c.Path
		} else {
			c.Path = prefix + "." + c.Path
		}
		v.errs = append(v.errs, &c)
	}
}

// listNames renders a sorted set of names for a message, eliding after a few.
func listNames(set map[string]bool) string {
	s := make([]string, 0, len(set))
	for k := range set {
		s = append(s, k)
	}
	sort.Strings(s)
	return elide(s, 8)
}

func elide(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s, ... (%d in all)", strings.Join(items[:n], ", "), len(items))
}

// findCycle returns one cycle (first node repeated at the end) in the directed graph given by
// the successor lists, or nil. Nodes are visited in the order given, so the result is stable.
func findCycle(nodes []string, succ map[string][]string) []string {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var cycle []string
	var visit func(n string) bool
	visit = func(n string) bool {
		color[n] = grey
		stack = append(stack, n)
		for _, m := range succ[n] {
			switch color[m] {
			case grey:
				for i := len(stack) - 1; i >= 0; i-- {
					if stack[i] == m {
						cycle = append(append([]string(nil), stack[i:]...), m)
						return true
					}
				}
			case white:
				if visit(m) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[n] = black
		return false
	}
	for _, n := range nodes {
		if color[n] == white && visit(n) {
			return cycle
		}
	}
	return nil
}

// sortedKeys returns a map's keys in order, so problems come out in a stable order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
