package formats

// The kit a system's section validator uses: the same rules, paths and
// wording as formats' own validation, so a section moved out of formats reports every
// problem byte for byte as it did inside it.

// Checker collects the problems of one section. The zero value is ready to use.
type Checker struct{ v validator }

// Errs returns the problems added so far.
func (c *Checker) Errs() ErrorList { return c.v.errs }

// Add records a problem at path with the offending value; rule is a format string.
func (c *Checker) Add(path string, value any, rule string, args ...any) {
	c.v.add(path, value, rule, args...)
}

// AddRaw is Add with a value rendered as given (no quoting): "(svc, gpu)".
func (c *Checker) AddRaw(path, value, rule string, args ...any) {
	c.v.add(path, raw(value), rule, args...)
}

// NotEmpty requires a non-empty string; it reports whether s was non-empty.
func (c *Checker) NotEmpty(path, s string) bool { return notEmpty(&c.v, path, s) }

// AtLeast requires an integer >= lo.
func (c *Checker) AtLeast(path string, x, lo int64) { atLeast(&c.v, path, x, lo) }

// InRange requires a finite number in [lo, hi].
func (c *Checker) InRange(path string, x, lo, hi float64) { inRange(&c.v, path, x, lo, hi) }

// Positive requires a finite number > 0.
func (c *Checker) Positive(path string, x float64) { positive(&c.v, path, x) }

// NonNegative requires a finite number >= 0.
func (c *Checker) NonNegative(path string, x float64) { nonNegative(&c.v, path, x) }

// Microseconds requires a latency in µs within the clock's bound (0 allowed).
func (c *Checker) Microseconds(path string, x float64) { microseconds(&c.v, path, x) }

// Rate requires a finite request rate >= 0 within the bound.
func (c *Checker) Rate(path string, x float64) { rate(&c.v, path, x) }

// BoundedDuration requires a duration within the clock's bound.
func (c *Checker) BoundedDuration(path string, d Duration) { boundedDuration(&c.v, path, d) }

// FiniteParams requires named, finite parameters.
func (c *Checker) FiniteParams(path string, params map[string]float64) {
	finiteParams(&c.v, path, params)
}

// GPU requires a non-empty GPU type that the plan's cluster (its own, else the embedded
// input cluster; none: any type) has.
// It returns the cluster's pool of that type, nil when it has none or there is no cluster.
func (c *Checker) GPU(p *Plan, path, gpu string) *GPUPool {
	return p.gpuChecker().check(&c.v, path, gpu)
}

// Names tracks names that must be unique and non-empty.
type Names struct{ n names }

// Check requires name to be non-empty and not seen before (the first path is named).
func (c *Checker) Check(n *Names, path, name string) {
	if n.n == nil {
		n.n = names{}
	}
	n.n.check(&c.v, path, name)
}

// Field is path.name (name alone at the root).
func Field(path, name string) string { return field(path, name) }

// Index is path[i].
func Index(path string, i int) string { return idx(path, i) }

// KeyPath is path.key, or path["key"] when key is not an identifier.
func KeyPath(path, key string) string { return keyPath(path, key) }

// Finite reports whether x is neither NaN nor infinite.
func Finite(x float64) bool { return finite(x) }

// NamesOf lists the names of items in order (nil for none): what a section's items define
// for the references other files make to them.
func NamesOf[E any](items []E, name func(*E) string) []string {
	var names []string
	for i := range items {
		names = append(names, name(&items[i]))
	}
	return names
}

// SortedKeys returns a map's keys in order, so problems come out in a stable order.
func SortedKeys[V any](m map[string]V) []string { return sortedKeys(m) }

// FindCycle returns one cycle (first node repeated at the end) of the directed graph given
// by successor lists, or nil; nodes are visited in the order given.
func FindCycle(nodes []string, succ map[string][]string) []string { return findCycle(nodes, succ) }

// PositiveDuration requires a duration > 0 within the clock's bound.
func (c *Checker) PositiveDuration(path string, d Duration) { positiveDuration(&c.v, path, d) }

// DurationIn requires a duration given as a number of units (unitUs µs each, named unit)
// within the clock's bound: > 0 when strict, else >= 0.
func (c *Checker) DurationIn(path string, x, unitUs float64, unit string, strict bool) {
	durationIn(&c.v, path, x, unitUs, unit, strict)
}

// First returns the path where name was first checked ("" if never).
func (n *Names) First(name string) string { return n.n[name] }

// PositiveRate requires a finite request rate > 0 within the bound.
func (c *Checker) PositiveRate(path string, x float64) { positiveRate(&c.v, path, x) }

// Elide joins items, eliding after n: "a, b, ... (12 in all)".
func Elide(items []string, n int) string { return elide(items, n) }

// ClusterGPUs is the number of GPUs of the plan's cluster (its own, else the embedded input
// cluster) and which one it is ("cluster" or "provenance.embedded.cluster"); -1 without one.
func ClusterGPUs(p *Plan) (total int, where string) {
	g := p.gpuChecker()
	if g.cluster == nil {
		return -1, ""
	}
	for _, pool := range g.cluster.GPUs {
		total += pool.Count
	}
	return total, g.where
}

// PlanCluster is the cluster a plan's GPU types are checked against (its own, else the
// embedded input cluster) and which one it is ("cluster" or "provenance.embedded.cluster");
// nil without one.
func PlanCluster(p *Plan) (*Cluster, string) {
	g := p.gpuChecker()
	return g.cluster, g.where
}

// OneOf requires s to be one of allowed.
func (c *Checker) OneOf(path, s string, allowed []string) { oneOf(&c.v, path, s, allowed) }

// PositiveMicroseconds requires a latency in µs > 0 within the clock's bound.
func (c *Checker) PositiveMicroseconds(path string, x float64) {
	positiveMicroseconds(&c.v, path, x)
}

// OptionalPositive accepts 0 (not set) or a finite number > 0.
func (c *Checker) OptionalPositive(path string, x float64) { optionalPositive(&c.v, path, x) }

// VGPULevel requires a vGPU level in 1..4.
func (c *Checker) VGPULevel(path string, x int) { vgpuLevel(&c.v, path, x) }

// Tagged is l as an error that also matches sentinel (errors.Is): how formats' own decoders
// return their problems (ErrDecode), for a system's decoders of its own files.
func (l ErrorList) Tagged(sentinel error) error { return l.tagged(sentinel) }

// Each checks the list es at path p: it must list at least one what ("app"), and check checks
// each element, its index i and path p[i].
func Each[E any](c *Checker, p, what string, es []E, check func(i int, ip string, e *E)) {
	if len(es) == 0 {
		c.Add(p, nil, "must list at least one %s", what)
	}
	for i := range es {
		check(i, Index(p, i), &es[i])
	}
}
