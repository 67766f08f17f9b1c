package export

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Resource quantities as the Kubernetes API server parses them (k8s.io/apimachinery's
// resource.ParseQuantity: the quantity grammar of its doc, such as "1", "500m", "2Gi", "1e3"):
// a manifest with "one" or "1 GPU" passes a schema that types them as strings but is refused
// on apply. An extended resource such as nvidia.com/gpu takes whole numbers only, and its
// request must equal its limit (the scheduler does not overcommit devices).

// extendedResource reports whether a resource name is an extended one (a domain-prefixed
// name outside kubernetes.io, e.g. nvidia.com/gpu).
func extendedResource(name string) bool {
	prefix, _, ok := strings.Cut(name, "/")
	return ok && !strings.HasSuffix(prefix, "kubernetes.io")
}

// quantityRules checks a container's limits and requests; at is the field path.
func quantityRules(at string, r Resources) []string {
	var errs []string
	check := func(kind string, m map[string]string) map[string]resource.Quantity {
		out := map[string]resource.Quantity{}
		keys := slices.Sorted(maps.Keys(m))
		for _, k := range keys {
			v := m[k]
			q, err := resource.ParseQuantity(v)
			switch {
			case err != nil:
				errs = append(errs, fmt.Sprintf("%s.%s.%s: %q: not a Kubernetes quantity (%v); e.g. \"1\", \"500m\", \"2Gi\"", at, kind, k, v, err))
				continue
			case q.Sign() < 0:
				errs = append(errs, fmt.Sprintf("%s.%s.%s: %q: must not be negative", at, kind, k, v))
			case extendedResource(k) && q.MilliValue()%1000 != 0:
				errs = append(errs, fmt.Sprintf("%s.%s.%s: %q: an extended resource takes whole numbers only", at, kind, k, v))
			}
			out[k] = q
		}
		return out
	}
	lim := check("limits", r.Limits)
	req := check("requests", r.Requests)
	names := slices.Sorted(maps.Keys(req))
	for _, k := range names {
		if !extendedResource(k) {
			continue
		}
		if l, ok := lim[k]; ok && l.Cmp(req[k]) != 0 {
			errs = append(errs, fmt.Sprintf("%s.requests.%s: %q: an extended resource's request must equal its limit (%q)", at, k, r.Requests[k], r.Limits[k]))
		}
	}
	return errs
}
