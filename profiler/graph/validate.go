package graph

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
)

// Validate checks that the graph is well formed: unique node names, every tensor named in a
// node or in Inputs/Outputs is declared with a known, positive shape, every tensor has at
// most one producer, no node reads a tensor before it is produced (topological order), and
// every graph output is produced. It reports every problem it finds.
func (g *Graph) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(g.Nodes) == 0 {
		add("graph %q: has no nodes", g.Name)
	}
	checkTensor := func(where, name string) (Tensor, bool) {
		t, ok := g.Tensors[name]
		if !ok {
			add("%s: tensor %q: not declared in tensors", where, name)
			return t, false
		}
		for _, d := range t.Shape {
			if d <= 0 {
				add("%s: tensor %q: shape %v: every dimension must be known and > 0 (set the input shape)", where, name, t.Shape)
				break
			}
		}
		return t, true
	}
	isInput := map[string]bool{}
	for _, in := range g.Inputs {
		checkTensor("inputs", in)
		isInput[in] = true
	}
	producer := map[string]int{}
	names := map[string]bool{}
	for i, n := range g.Nodes {
		where := fmt.Sprintf("nodes[%d] %q", i, n.Name)
		if n.Name == "" {
			add("nodes[%d]: empty name", i)
		} else if names[n.Name] {
			add("%s: duplicate node name", where)
		}
		names[n.Name] = true
		if n.Op == "" {
			add("%s: empty op", where)
		}
		if len(n.Outputs) == 0 {
			add("%s: has no outputs", where)
		}
		for _, in := range n.Inputs {
			t, ok := checkTensor(where, in)
			if !ok || t.Const || isInput[in] {
				continue
			}
			if _, ok := producer[in]; !ok {
				add("%s: input %q: not produced by an earlier node (graph not in topological order, or a missing graph input)", where, in)
			}
		}
		for _, out := range n.Outputs {
			t, ok := checkTensor(where, out)
			if ok && t.Const {
				add("%s: output %q: is marked const", where, out)
			}
			if j, dup := producer[out]; dup {
				add("%s: output %q: already produced by nodes[%d]", where, out, j)
			} else if isInput[out] {
				add("%s: output %q: is a graph input", where, out)
			}
			producer[out] = i
		}
	}
	for _, out := range g.Outputs {
		if _, ok := checkTensor("outputs", out); ok && !isInput[out] {
			if _, ok := producer[out]; !ok {
				add("outputs: %q: produced by no node", out)
			}
		}
	}
	return errors.Join(errs...)
}

// StableOrder is Kahn's topological order of the nodes 0..n-1, given each node's number of
// distinct producers (indeg, used up) and each node's users: among the ready nodes the
// lowest index goes first, so nodes already in a topological order keep it. It is shorter
// than n when the nodes have a cycle.
func StableOrder(indeg []int, users [][]int) []int {
	var ready []int
	for i := range indeg {
		if indeg[i] == 0 {
			ready = append(ready, i)
		}
	}
	order := make([]int, 0, len(indeg))
	for len(ready) > 0 {
		sort.Ints(ready)
		i := ready[0]
		ready = ready[1:]
		order = append(order, i)
		for _, u := range users[i] {
			if indeg[u]--; indeg[u] == 0 {
				ready = append(ready, u)
			}
		}
	}
	return order
}

// Toposort reorders the nodes into a topological order (stable: among ready nodes the one
// that came first keeps its place), so graphs from exporters that list nodes out of order
// can be used. It fails on a cycle.
func (g *Graph) Toposort() error {
	producer := g.Producers()
	n := len(g.Nodes)
	indeg := make([]int, n)
	users := make([][]int, n)
	for i, nd := range g.Nodes {
		seen := map[int]bool{}
		for _, in := range nd.Inputs {
			if p, ok := producer[in]; ok && p != i && !seen[p] {
				seen[p] = true
				indeg[i]++
				users[p] = append(users[p], i)
			}
		}
	}
	order := StableOrder(indeg, users)
	if len(order) != n {
		return fmt.Errorf("graph %q: has a cycle", g.Name)
	}
	nodes := make([]Node, n)
	for k, i := range order {
		nodes[k] = g.Nodes[i]
	}
	g.Nodes = nodes
	return nil
}

// AllCutBytes returns, for every position p in 0..len(Nodes), the fp16-accounted bytes at
// batch 1 of the tensors live across p: produced by a node before p (or a graph input) and
// read by a node at or after p. Graph outputs count as read at the end, so a model with an
// early output carries it to the last partition. Constants never count.
func AllCutBytes(g *Graph) []int64 {
	n := len(g.Nodes)
	diff := make([]int64, n+2)
	birth := map[string]int{}
	for _, in := range g.Inputs {
		birth[in] = -1
	}
	for i, nd := range g.Nodes {
		for _, o := range nd.Outputs {
			birth[o] = i
		}
	}
	last := map[string]int{}
	for i, nd := range g.Nodes {
		for _, in := range nd.Inputs {
			if l, ok := last[in]; !ok || i > l {
				last[in] = i
			}
		}
	}
	for _, o := range g.Outputs {
		last[o] = n
	}
	// Iterate tensors in sorted order so the sums are computed identically every run.
	names := slices.Sorted(maps.Keys(last))
	for _, name := range names {
		b, ok := birth[name]
		t := g.Tensors[name]
		if !ok || t.Const {
			continue
		}
		l := last[name]
		if l <= b {
			continue
		}
		size := t.TransferBytes()
		// Live on positions b+1..l.
		diff[b+1] += size
		diff[l+1] -= size
	}
	out := make([]int64, n+1)
	var cur int64
	for p := 0; p <= n; p++ {
		cur += diff[p]
		out[p] = cur
	}
	return out
}

// CutBytes returns the fp16-accounted bytes at batch 1 crossing each position p (the cut
// between node p-1 and node p): every tensor produced at or before node p-1, or a graph
// input, and consumed at or after node p. Positions must lie in 0..len(Nodes).
func CutBytes(g *Graph, positions []int) ([]int64, error) {
	all := AllCutBytes(g)
	out := make([]int64, len(positions))
	for i, p := range positions {
		if p < 0 || p >= len(all) {
			return nil, fmt.Errorf("cut position %d: must be in 0..%d", p, len(all)-1)
		}
		out[i] = all[p]
	}
	return out, nil
}
