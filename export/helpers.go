package export

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/export/internal/tritonpb"
	"github.com/plan-dev/plan/formats"
	"sigs.k8s.io/yaml"
)

// Helpers the systems' exporters share to write and read back the plan records they embed.

// JoinInts writes xs as a comma-separated list ("0,3,5"), the form GPU lists take in
// parameters and annotations.
func JoinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// ParseIndexList reads JoinInts' form back: a non-empty list of integers in [0, limit).
func ParseIndexList(s string, limit int) ([]int, error) {
	if s == "" {
		return nil, fmt.Errorf("empty")
	}
	var out []int
	for _, g := range strings.Split(s, ",") {
		x, err := strconv.Atoi(g)
		if err != nil || x < 0 || x >= limit {
			return nil, fmt.Errorf("%q: not a GPU index", g)
		}
		out = append(out, x)
	}
	return out, nil
}

// PlanGPUTypes is the cluster an export of p places on (the plan's own, else the one its
// provenance embeds) and each GPU index's type in cluster order, the numbering the dataplane
// replays the plan with. what names the system ("a qlm plan") in the errors.
func PlanGPUTypes(p *formats.Plan, what string) (*formats.Cluster, []string, error) {
	cl := p.Cluster
	if cl == nil && p.Provenance.Embedded != nil {
		cl = p.Provenance.Embedded.Cluster
	}
	if cl == nil {
		return nil, nil, fmt.Errorf("cluster: missing: %s must carry its cluster", what)
	}
	var types []string // GPU index → type
	for _, g := range cl.GPUs {
		for k := 0; k < g.Count; k++ {
			types = append(types, g.Type)
		}
	}
	if len(types) == 0 {
		return nil, nil, fmt.Errorf("cluster.gpus: no GPUs")
	}
	return cl, types, nil
}

// Comment renders lines as '#' comments (Triton's text format and YAML both take them).
func Comment(lines ...string) []byte {
	var b strings.Builder
	for _, ln := range lines {
		b.WriteString("# " + ln + "\n")
	}
	return []byte(b.String())
}

// MustJSON marshals a plan record. It panics only for values JSON cannot represent, which
// the records (plain structs of numbers, strings, durations and maps) never hold.
func MustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TritonGroups maps a model configuration's instance groups to the GPUs each is pinned to,
// and counts the instances of all of them: what ReadBack checks a recorded placement against.
func TritonGroups(c *tritonpb.ModelConfig) (groups map[string][]int, count int) {
	groups = map[string][]int{}
	for _, g := range c.InstanceGroup {
		gs := make([]int, len(g.Gpus))
		for i, x := range g.Gpus {
			gs[i] = int(x)
		}
		groups[g.Name] = gs
		count += int(g.Count)
	}
	return groups, count
}

// TritonPinned checks a model configuration whose unit k is the instance group names[k]
// pinned to exactly the plan GPUs plan[k], numbered within the model's pod (PodGPUs): for the
// first unit whose group is missing or on other GPUs, mismatch words the error from the
// group's GPUs and the pod-local ones it should have. It returns the instances' count.
func TritonPinned(c *tritonpb.ModelConfig, names []string, plan [][]int, mismatch func(k int, got, local []int) error) (int, error) {
	groups, count := TritonGroups(c)
	local := PodGPUs(plan)
	for k, name := range names {
		if gs, ok := groups[name]; !ok || !slices.Equal(gs, local[k]) {
			return 0, mismatch(k, gs, local[k])
		}
	}
	return count, nil
}

// ReadTriton parses a config.pbtxt a readback reads (ParseTriton) with its parameters as
// strings (TritonParams): what every system's readback starts a Triton model from.
func ReadTriton(data []byte) (*tritonpb.ModelConfig, map[string]string, error) {
	c, err := ParseTriton(data)
	if err != nil {
		return nil, nil, err
	}
	return c, TritonParams(c), nil
}

// AnnotationParams maps the plan.dev annotations of an exported KServe object back to the
// parameters they were written from: plan.dev/SYSTEM.X to SYSTEM.X (the system's own
// parameters) and any other plan.dev/X to plan.X (the shared ones, export.ParamGPU, ...).
// Other annotations are not the plan's and are left out.
func AnnotationParams(annotations map[string]string, system string) map[string]string {
	params := map[string]string{}
	for k, v := range annotations {
		if rest, ok := strings.CutPrefix(k, labelPrefix+system+"."); ok {
			params[system+"."+rest] = v
		} else if rest, ok := strings.CutPrefix(k, labelPrefix); ok {
			params["plan."+rest] = v
		}
	}
	return params
}

// ReadFixedService reads an exported InferenceService whose replica count is fixed
// (minReplicas = maxReplicas) and whose pods a node selector pins to the recorded GPU type,
// with its plan parameters (AnnotationParams of system): the shape of every model or
// service CascadeServe's and DyOrc's KServe exports write.
func ReadFixedService(data []byte, system string) (*InferenceService, map[string]string, error) {
	var s InferenceService
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		return nil, nil, err
	}
	params := AnnotationParams(s.Metadata.Annotations, system)
	p := s.Spec.Predictor
	if p.MinReplicas != p.MaxReplicas {
		return nil, nil, fmt.Errorf("service %s: want minReplicas = maxReplicas", s.Metadata.Name)
	}
	if len(p.NodeSelector) == 0 {
		return nil, nil, fmt.Errorf("service %s: no node selector for the recorded GPU %q", s.Metadata.Name, params[ParamGPU])
	}
	return &s, params, nil
}

// TritonParams returns a model configuration's parameters as strings.
func TritonParams(c *tritonpb.ModelConfig) map[string]string {
	params := make(map[string]string, len(c.Parameters))
	for k, v := range c.Parameters {
		params[k] = v.GetStringValue()
	}
	return params
}
