package formats

import (
	"cmp"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/plan-dev/plan/internal/base/gpucat"
)

// KnownGPUMemory is the memory of one GPU of a type the GPU catalogue (internal/base/gpucat)
// has specifications for, 0 for any other type: clusters may name other types, but then
// must give memory_bytes.
func KnownGPUMemory(gpu string) int64 {
	s, _ := gpucat.Find(gpu)
	return s.MemoryBytes
}

// knownGPUList names the catalogue's types by memory, smallest first, for error messages.
func knownGPUList() string {
	all := gpucat.All()
	slices.SortStableFunc(all, func(a, b gpucat.Spec) int {
		if c := cmp.Compare(a.MemoryBytes, b.MemoryBytes); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	names := make([]string, len(all))
	for i, s := range all {
		names[i] = s.Name
	}
	return strings.Join(names, ", ")
}

// Validate checks a cluster.
func (c *Cluster) Validate() ErrorList {
	v := &validator{}
	checkMeta(v, c.TypeMeta, KindCluster)
	if len(c.GPUs) == 0 {
		v.add("gpus", nil, "must list at least one GPU type")
	}
	seen := map[string]bool{}
	for i, g := range c.GPUs {
		p := idx("gpus", i)
		uniqueGPU(v, seen, field(p, "type"), g.Type)
		if g.Count < 0 {
			v.add(field(p, "count"), g.Count, "must be >= 0")
		}
		if g.PerServer < 1 {
			v.add(field(p, "per_server"), g.PerServer, "must be >= 1")
		}
		if g.MemoryBytes < 0 {
			v.add(field(p, "memory_bytes"), g.MemoryBytes, "must be >= 0")
		}
		if KnownGPUMemory(g.Type) == 0 && g.Type != "" && g.MemoryBytes == 0 {
			if s, err := gpucat.Lookup(g.Type); err == nil {
				v.add(field(p, "type"), g.Type, "unknown GPU type: the catalogue's %s goes by that name; write %s, or give memory_bytes for a custom type", s.Name, s.Name)
			} else {
				v.add(field(p, "type"), g.Type, "unknown GPU type (known: %s); give memory_bytes for a custom type", knownGPUList())
			}
		}
		for j, lv := range g.VGPU {
			if lv < 1 || lv > 4 {
				v.add(idx(field(p, "vgpu"), j), lv, "must be in 1..4")
			}
		}
		if g.Class != "" && g.Class != "high" && g.Class != "low" {
			v.add(field(p, "class"), g.Class, "must be high or low")
		}
		nodeLabels(v, field(p, "node_labels"), g.NodeLabels)
		if g.PricePerHour != nil {
			price(v, field(p, "price_per_hour"), *g.PricePerHour)
		}
		if g.SpotPricePerHour != nil {
			price(v, field(p, "spot_price_per_hour"), *g.SpotPricePerHour)
			if g.PricePerHour != nil && *g.SpotPricePerHour > *g.PricePerHour {
				v.add(field(p, "spot_price_per_hour"), *g.SpotPricePerHour, "must be <= price_per_hour (%g): spot capacity is the cheaper, preemptible kind", *g.PricePerHour)
			}
		}
		priceBasis(v, field(p, "price_basis"), g.PriceBasis)
		// One basis per file (ecosystem-dropin.md §6): a cost objective adding a GPU's
		// price to a whole VM's would compare unlike things.
		if g.PriceBasis != "" {
			if c.PriceBasis != "" && g.PriceBasis != c.PriceBasis {
				v.add(field(p, "price_basis"), g.PriceBasis, "mixes price bases: the file's price_basis is %s (one basis per file)", c.PriceBasis)
			} else if first, ok := basisAt(c.GPUs[:i]); ok && first.basis != g.PriceBasis {
				v.add(field(p, "price_basis"), g.PriceBasis, "mixes price bases: gpus[%d].price_basis is %s (one basis per file)", first.at, first.basis)
			}
		}
		if g.Available != nil && *g.Available < 0 {
			v.add(field(p, "available"), *g.Available, "must be >= 0 (or omitted: unbounded)")
		}
	}
	priceBasis(v, "price_basis", c.PriceBasis)
	if c.Currency != "" && !validCurrency(c.Currency) {
		v.add("currency", c.Currency, "must be 1 to 8 letters (a currency code such as USD or EUR)")
	}
	bandwidth(v, "nic_gbps", c.NICGbps, false)
	if c.NICDerate != 0 && !(c.NICDerate >= 1 && !math.IsInf(c.NICDerate, 0)) {
		v.add("nic_derate", c.NICDerate, "must be >= 1 (or omitted)")
	}
	// Bounded at 10 TB/s, ten times NVLink 5's 1.8 TB/s (llm-deploy-search §1 "Links").
	if l := c.KVLinkGBps; l != nil && !(finite(*l) && *l > 0 && *l <= 1e4) {
		v.add("kv_link_gbps", *l, "must be in (0, 10000] GB/s")
	}
	if c.HostMemoryBytes < 0 {
		v.add("host_memory_bytes", c.HostMemoryBytes, "must be >= 0")
	}
	for i, s := range c.Servers {
		p := idx("servers", i)
		if s.Name == "" {
			v.add(field(p, "name"), s.Name, "must not be empty")
		}
		if !seen[s.GPU] {
			v.add(field(p, "gpu"), s.GPU, "unknown GPU type: not in gpus[]")
		}
		if s.GPUs < 1 {
			v.add(field(p, "gpus"), s.GPUs, "must be >= 1")
		}
		bandwidth(v, field(p, "nic_gbps"), s.NICGbps, true)
	}
	return v.errs
}

func checkMeta(v *validator, t TypeMeta, kind string) {
	if t.APIVersion != APIVersion {
		v.add("apiVersion", t.APIVersion, "must be %s", APIVersion)
	}
	if t.Kind != kind {
		v.add("kind", t.Kind, "must be %s", kind)
	}
}

// positive requires a finite number > 0.
func positive(v *validator, path string, x float64) {
	if math.IsNaN(x) || math.IsInf(x, 0) || x <= 0 {
		v.add(path, x, "must be > 0")
	}
}

// nonNegative requires a finite number >= 0.
// MaxPricePerHour bounds a GPU's price per hour. The costliest GPU instances list at tens of
// dollars per GPU-hour; far larger prices become cost coefficients past the solver's numeric
// range (HiGHS treats 1e20 as infinite and loses precision well before it), so a typo such as
// 1e308 is refused here rather than failing inside the solver.
const MaxPricePerHour = 1e6

// price checks a GPU price per hour: finite, >= 0 and at most MaxPricePerHour.
func price(v *validator, path string, x float64) {
	if !math.IsNaN(x) && x > MaxPricePerHour {
		v.add(path, x, "must be <= %g (a price per GPU-hour)", float64(MaxPricePerHour))
		return
	}
	nonNegative(v, path, x)
}

// priceBasis accepts PriceBasisGPU, PriceBasisVM or nothing.
func priceBasis(v *validator, path, b string) {
	if b != "" && b != PriceBasisGPU && b != PriceBasisVM {
		v.add(path, b, "must be gpu (price of one GPU) or vm (price of one server of per_server GPUs)")
	}
}

// basisAt is the first stated price basis among gpus and its index.
func basisAt(gpus []GPUPool) (struct {
	at    int
	basis string
}, bool) {
	for i, g := range gpus {
		if g.PriceBasis != "" {
			return struct {
				at    int
				basis string
			}{i, g.PriceBasis}, true
		}
	}
	return struct {
		at    int
		basis string
	}{}, false
}

func nonNegative(v *validator, path string, x float64) {
	if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
		v.add(path, x, "must be >= 0")
	}
}

// labelName is a Kubernetes label name or value: at most 63 of [A-Za-z0-9-_.], alphanumeric
// at both ends (empty allowed for values).
var labelName = regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$`)

// labelPrefix is a label key's DNS-subdomain prefix (at most 253 characters).
var labelPrefix = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// nodeLabels checks a GPU type's node labels as Kubernetes accepts them in a nodeSelector:
// an exported manifest with an invalid one is rejected by the API server.
func nodeLabels(v *validator, path string, ls map[string]string) {
	keys := make([]string, 0, len(ls))
	for k := range ls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		prefix, name, hasPrefix := strings.Cut(k, "/")
		if !hasPrefix {
			prefix, name = "", k
		}
		if name == "" || !labelName.MatchString(name) || hasPrefix && (len(prefix) > 253 || !labelPrefix.MatchString(prefix)) {
			v.add(path, k, "not a Kubernetes label key ([prefix/]name, name at most 63 of A-Z a-z 0-9 - _ . starting and ending alphanumeric)")
		}
		if !labelName.MatchString(ls[k]) {
			v.add(path+"."+k, ls[k], "not a Kubernetes label value (at most 63 of A-Z a-z 0-9 - _ . starting and ending alphanumeric)")
		}
	}
}

// uniqueGPU requires the GPU type at path to be named, and once in its list (seen holds the
// types before it): a cluster's pools, a fleet's GPU use.
func uniqueGPU(v *validator, seen map[string]bool, path, gpu string) {
	if gpu == "" {
		v.add(path, gpu, "must not be empty")
	} else if seen[gpu] {
		v.add(path, gpu, "duplicate GPU type")
	}
	seen[gpu] = true
}
