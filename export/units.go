package export

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/formats"
)

// Group is what a system's plan becomes before rendering: applications (a PPipe pipeline, a
// PARD app), each a set of units (a pool, a module) with its placement and timing. The three
// targets render the same groups, so every system gets all three from one builder.
type Group struct {
	// Name is the group's object name (DNS label): Triton ensemble, InferenceGraph, Ray app.
	Name string
	// Chain: the units run in order, each feeding the next (an ensemble and a Sequence graph
	// are written only for chains: Triton ensembles and KServe Sequences have no conditions).
	Chain bool
	// Positional wires a chain's ensemble by position (step k's i-th input is step k−1's
	// i-th output) instead of by tensor name (the cut model's tensors keep their names).
	Positional bool
	Units      []Unit
}

// Unit is one exported model: a Triton model, an InferenceService, a Ray deployment.
type Unit struct {
	Name      string
	Placement Placement
	// QueueDelayUs is how long a batch may wait to fill; TimeoutUs when a queued request is
	// rejected (both from the plan's latency budget).
	QueueDelayUs int64
	TimeoutUs    int64
	// Inputs and Outputs declare the model's tensors (none: Triton completes them from the
	// model file); ONNX is the model file written beside the config (nil = none).
	Inputs, Outputs []TritonTensor
	ONNX            []byte
	// Next are the names of the units a result goes to.
	Next []string
	// Scaling is the unit's autoscaling range from the plan's headroom (KServe).
	Scaling Scaling
	// Share, when set, names the units (of one GPU type) whose slices the plan rounds up to
	// whole GPUs together, so they share GPUs (PPipe's stage rounding); empty: the unit's
	// slices take GPUs of their own.
	Share string
}

// Build turns a plan into groups.
type Build func(p *formats.Plan, o Options) ([]Group, error)

// Exporters returns a system's exporter for every target of reg that renders Groups.
func Exporters(reg *Registry, build Build) []Exporter {
	return Layout[[]Group]{Build: build}.Exporters(reg)
}

// TritonFiles renders a model repository: <unit>/config.pbtxt (and <unit>/1/model.onnx when
// the unit has a model file), plus an ensemble <group>/config.pbtxt per chain whose units
// declare their tensors. Each unit's instances are pinned to GPUs of their own (PoolGroups),
// or shared with the units of its Share (tritonLayout), numbered per GPU type in the order of
// the units: the server of a type sees those GPUs.
func TritonFiles(gs []Group, o Options) (Files, error) {
	f := Files{}
	layout, servers, where, err := tritonLayout(gs, o.PerServer)
	if err != nil {
		return nil, err
	}
	for _, g := range gs {
		for _, u := range g.Units {
			pl := u.Placement
			c := TritonConfig{Name: u.Name, Platform: "onnxruntime_onnx", MaxBatchSize: pl.Batch,
				Inputs: u.Inputs, Outputs: u.Outputs,
				Batching:   &TritonBatching{Preferred: []int{pl.Batch}, MaxQueueDelayUs: u.QueueDelayUs, TimeoutUs: u.TimeoutUs},
				Parameters: pl.Params()}
			c.Parameters[ParamServers] = strconv.Itoa(servers[u.Name])
			if u.Share != "" {
				// The pools of one share group run in one Triton server (deploy.go).
				c.Parameters[ParamPod] = DNSLabel(o.Name + "-" + u.Share + "-" + pl.GPU)
			}
			c.Groups = layout[u.Name]
			head := Comment(where[u.Name])
			if err := put(f, u.Name+"/config.pbtxt", append(head, c.PBTxt()...)); err != nil {
				return nil, err
			}
			if u.ONNX != nil {
				if err := put(f, u.Name+"/1/model.onnx", u.ONNX); err != nil {
					return nil, err
				}
			}
		}
		if e := ensemble(g); e != nil {
			if err := put(f, g.Name+"/config.pbtxt", e.PBTxt()); err != nil {
				return nil, err
			}
			// Triton loads an ensemble from a version directory too (empty).
			if err := put(f, g.Name+"/1/.keep", nil); err != nil {
				return nil, err
			}
		}
	}
	return f, nil
}

// ensemble chains a group's units by tensor name (Triton ensemble scheduling): each step reads
// the latest producer of every input; an output that re-produces a tensor (a pass-through
// across a cut) gets a step-suffixed ensemble name.
func ensemble(g Group) *TritonConfig {
	if !g.Chain || len(g.Units) < 2 {
		return nil
	}
	c := &TritonConfig{Name: g.Name, Platform: "ensemble", MaxBatchSize: g.Units[0].Placement.Batch}
	cur := map[string]string{}
	for _, t := range g.Units[0].Inputs {
		cur[t.Name] = t.Name
		c.Inputs = append(c.Inputs, t)
	}
	for k, u := range g.Units {
		if len(u.Inputs) == 0 || len(u.Outputs) == 0 {
			return nil
		}
		c.MaxBatchSize = min(c.MaxBatchSize, u.Placement.Batch)
		st := TritonStep{Model: u.Name, Input: map[string]string{}, Output: map[string]string{}}
		if g.Positional && k > 0 {
			prev := c.Steps[k-1]
			if len(u.Inputs) != len(g.Units[k-1].Outputs) {
				return nil
			}
			for i, t := range u.Inputs {
				st.Input[t.Name] = prev.Output[g.Units[k-1].Outputs[i].Name]
			}
			for _, t := range u.Outputs {
				name := t.Name + "_s" + strconv.Itoa(k)
				if k == len(g.Units)-1 && !inUse(cur, t.Name) {
					name = t.Name // the ensemble's output keeps the model's name
				}
				cur[t.Name] = name
				st.Output[t.Name] = name
			}
			c.Steps = append(c.Steps, st)
			continue
		}
		for _, t := range u.Inputs {
			src, ok := cur[t.Name]
			if !ok {
				return nil // the chain does not produce what this unit reads
			}
			st.Input[t.Name] = src
		}
		for _, t := range u.Outputs {
			name := t.Name
			if _, taken := cur[t.Name]; taken || g.Positional {
				name = t.Name + "_s" + strconv.Itoa(k)
			}
			cur[t.Name] = name
			st.Output[t.Name] = name
		}
		c.Steps = append(c.Steps, st)
	}
	for _, t := range g.Units[len(g.Units)-1].Outputs {
		c.Outputs = append(c.Outputs, TritonTensor{Name: cur[t.Name], DataType: t.DataType, Dims: t.Dims})
	}
	return c
}

// inUse reports whether an ensemble tensor is already called name.
func inUse(cur map[string]string, name string) bool {
	for _, v := range cur {
		if v == name {
			return true
		}
	}
	return false
}

// KServeFiles renders one InferenceService per unit (inferenceservice-<unit>.yaml) and one
// Sequence InferenceGraph per chain (inferencegraph-<group>.yaml).
func KServeFiles(gs []Group, o Options) (Files, error) {
	f := Files{}
	for _, g := range gs {
		var names []string
		for _, u := range g.Units {
			sel, err := o.NodeSelector(u.Placement.GPU)
			if err != nil {
				return nil, err
			}
			isvc := NewInferenceService(u.Name, o.StorageURI, u.Placement, sel, u.Scaling, u.QueueDelayUs, u.TimeoutUs)
			if len(u.Next) > 0 {
				// The graph that carries this edge must be exported (rules.go checks it).
				isvc.Metadata.Annotations[labelPrefix+"next"] = strings.Join(u.Next, ",")
			}
			b, err := YAML(isvc)
			if err != nil {
				return nil, err
			}
			if err := put(f, "inferenceservice-"+u.Name+".yaml", b); err != nil {
				return nil, err
			}
			names = append(names, u.Name)
		}
		var graph *InferenceGraph
		switch {
		case g.Chain && len(names) > 0:
			sg := NewSequenceGraph(g.Name, names)
			graph = &sg
		case hasEdges(g):
			dg, err := DAGGraph(g)
			if err != nil {
				return nil, err
			}
			graph = &dg
		}
		if graph != nil {
			b, err := YAML(*graph)
			if err != nil {
				return nil, err
			}
			if err := put(f, "inferencegraph-"+g.Name+".yaml", b); err != nil {
				return nil, err
			}
		}
	}
	return f, nil
}

// RayFiles renders serve-config.yaml: one application per group (route /<group>), one
// deployment per unit.
func RayFiles(gs []Group, o Options) (Files, error) {
	var c RayConfig
	for _, g := range gs {
		a := RayApp{Name: g.Name, RoutePrefix: "/" + g.Name, ImportPath: o.ImportPath}
		for _, u := range g.Units {
			accel, err := o.RayAcceleratorType(u.Placement.GPU)
			if err != nil {
				return nil, err
			}
			a.Deployments = append(a.Deployments, NewRayDeployment(u.Name, u.Placement, accel, u.QueueDelayUs, u.TimeoutUs, u.Next))
		}
		c.Applications = append(c.Applications, a)
	}
	b, err := YAML(c)
	if err != nil {
		return nil, err
	}
	return Files{RayConfigFile: b}, nil
}

func hasEdges(g Group) bool {
	for _, u := range g.Units {
		if len(u.Next) > 0 {
			return true
		}
	}
	return false
}

// DAGGraph expresses an application whose units form a DAG (PARD's fan-out and fan-in) as an
// InferenceGraph: a root Sequence over the DAG's topological levels, a level of one unit a
// service step, a level of several an Ensemble node that calls them in parallel. It refuses,
// naming the application, an edge to a unit the application does not have or a cycle: the
// export never drops an application's graph.
func DAGGraph(g Group) (InferenceGraph, error) {
	idx := map[string]int{}
	for i, u := range g.Units {
		idx[u.Name] = i
	}
	indeg := make([]int, len(g.Units))
	for _, u := range g.Units {
		for _, n := range u.Next {
			j, ok := idx[n]
			if !ok {
				return InferenceGraph{}, fmt.Errorf("application %s: %s feeds %s, which the application does not have: cannot export its graph", g.Name, u.Name, n)
			}
			indeg[j]++
		}
	}
	var level []int
	for i, d := range indeg {
		if d == 0 {
			level = append(level, i)
		}
	}
	ig := InferenceGraph{APIVersion: "serving.kserve.io/v1alpha1", Kind: "InferenceGraph", Metadata: ObjectMeta{Name: g.Name},
		Spec: GraphSpec{Nodes: map[string]GraphNode{}}}
	root := GraphNode{RouterType: "Sequence"}
	done := 0
	for k := 0; len(level) > 0; k++ {
		data := "$response"
		if k == 0 {
			data = "$request"
		}
		st := GraphStep{Name: "level-" + strconv.Itoa(k), Data: data}
		if len(level) == 1 {
			st.ServiceName = g.Units[level[0]].Name
		} else {
			node := GraphNode{RouterType: "Ensemble"}
			for _, i := range level {
				node.Steps = append(node.Steps, GraphStep{Name: g.Units[i].Name, ServiceName: g.Units[i].Name})
			}
			st.NodeName = st.Name
			ig.Spec.Nodes[st.Name] = node
		}
		root.Steps = append(root.Steps, st)
		done += len(level)
		var next []int
		for _, i := range level {
			for _, n := range g.Units[i].Next {
				j := idx[n]
				if indeg[j]--; indeg[j] == 0 {
					next = append(next, j)
				}
			}
		}
		sort.Ints(next)
		level = next
	}
	if done != len(g.Units) {
		return InferenceGraph{}, fmt.Errorf("application %s: its units' edges form a cycle: cannot export its graph", g.Name)
	}
	ig.Spec.Nodes["root"] = root
	return ig, nil
}

func put(f Files, name string, b []byte) error {
	return f.Put(name, b, "rename a model, module or application")
}

// Put adds file name to f, refusing a second file of the same name: two objects of a plan
// rendered to one name would overwrite each other. hint says what to rename (a model, an
// instance, ...). A nil b is stored as an empty file.
func (f Files) Put(name string, b []byte, hint string) error {
	if _, dup := f[name]; dup {
		return fmt.Errorf("export: two objects named %s (%s)", name, hint)
	}
	if b == nil {
		b = []byte{}
	}
	f[name] = b
	return nil
}
