package dyorc

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/plan-dev/plan/export"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
)

// maxGPUs bounds the GPU indices and deployment positions a file may name (a corrupt index
// must not make ReadBack allocate without bound).
const maxGPUs = 1 << 16

// Exported is what ReadBack recovers: the plan's dyorc section and each application's
// workflow.
type Exported struct {
	Plan *dyorcsec.DyOrcPlan
	Apps map[string]dyorcsec.App
}

// ReadBack recovers a DyOrc plan from its exported files alone: the deployments in plan
// order, the placement per GPU (services sorted by name, GPUs that hold nothing left out),
// the policy and parameters, and every application's workflow. Each service's record is
// cross-checked against the target's own fields (Triton instance groups and max_batch_size,
// KServe replicas and batcher, Ray num_replicas), and a KServe graph's root against its
// workflow's unrolled steps, so files whose native settings disagree with the record are an
// error.
func ReadBack(target string, files export.Files) (*Exported, error) {
	rb := &reader{deps: map[int]dep{}, apps: map[string]dyorcsec.App{}}
	if err := export.ReadFiles(target, files, export.Readers{export.Triton: func(_ string, data []byte) error { return rb.triton(data) }, export.KServe: export.DataReader(rb.kserve), export.Ray: export.DataReader(rb.ray)}); err != nil {
		return nil, err
	}
	return rb.result()
}

type dep struct {
	d    dyorcsec.ServiceDeployment
	gpus []int
}

type reader struct {
	rec  *Record
	deps map[int]dep
	apps map[string]dyorcsec.App
}

// service records one service deployment from its parameters; count and batch are the
// target's own replica count and largest batch.
func (rb *reader) service(params map[string]string, count, batch int) error {
	key := params[export.ParamKey]
	svc, gpu, ok := strings.Cut(key, "/")
	if !ok || svc == "" || gpu != params[export.ParamGPU] {
		return fmt.Errorf("%s: %q: not service/%s", export.ParamKey, key, params[export.ParamGPU])
	}
	n, err1 := strconv.Atoi(params[export.ParamCount])
	b, err2 := strconv.Atoi(params[export.ParamBatch])
	i, err3 := strconv.Atoi(params[ParamIndex])
	if err1 != nil || err2 != nil || err3 != nil || i < 0 || i >= maxGPUs {
		return fmt.Errorf("%s: %s / %s / %s: %q / %q / %q: not integers", key, export.ParamCount, export.ParamBatch, ParamIndex, params[export.ParamCount], params[export.ParamBatch], params[ParamIndex])
	}
	gpus, err := export.ParseIndexList(params[ParamGPUs], maxGPUs)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", key, ParamGPUs, err)
	}
	if n != count || n != len(gpus) || b != batch {
		return fmt.Errorf("%s: %d replicas and batch %d recorded, the target's settings say %d replicas (%d GPUs listed) and batch %d", key, n, b, count, len(gpus), batch)
	}
	if _, dup := rb.deps[i]; dup {
		return fmt.Errorf("%s: deployment index %d recorded twice", key, i)
	}
	rb.deps[i] = dep{d: dyorcsec.ServiceDeployment{Service: svc, GPU: gpu, Replicas: n, MaxBatch: b}, gpus: gpus}
	return nil
}

// app records one application's workflow and the plan record it carries.
func (rb *reader) app(params map[string]string) error {
	name := params[ParamApp]
	if name == "" {
		return fmt.Errorf("no %s", ParamApp)
	}
	var rec Record
	if err := formats.StrictUnmarshal([]byte(params[ParamPlan]), &rec); err != nil {
		return fmt.Errorf("app %s: %s: %w", name, ParamPlan, err)
	}
	if rb.rec != nil && export.MustJSON(*rb.rec) != export.MustJSON(rec) {
		return fmt.Errorf("app %s: %s: differs from another application's", name, ParamPlan)
	}
	if rec.GPUs < 1 || rec.GPUs > maxGPUs {
		return fmt.Errorf("app %s: %s: gpus %d: must be in [1, %d]", name, ParamPlan, rec.GPUs, maxGPUs)
	}
	rb.rec = &rec
	var a dyorcsec.App
	if err := formats.StrictUnmarshal([]byte(params[ParamWorkflow]), &a); err != nil {
		return fmt.Errorf("app %s: %s: %w", name, ParamWorkflow, err)
	}
	if _, dup := rb.apps[name]; dup {
		return fmt.Errorf("app %s recorded twice", name)
	}
	rb.apps[name] = a
	return nil
}

func (rb *reader) triton(data []byte) error {
	c, params, err := export.ReadTriton(data)
	if err != nil {
		return err
	}
	if c.Backend == "python" {
		return rb.app(params)
	}
	gpus, err := export.ParseIndexList(params[ParamGPUs], maxGPUs)
	if err != nil {
		return fmt.Errorf("model %s: %s: %w", c.Name, ParamGPUs, err)
	}
	// Each GPU holding the service is the instance group g<gpu> pinned to it, numbered
	// within the service's pod (export.PodGPUs).
	names, plan := make([]string, len(gpus)), make([][]int, len(gpus))
	for k, g := range gpus {
		names[k], plan[k] = "g"+strconv.Itoa(g), []int{g}
	}
	count, err := export.TritonPinned(c, names, plan, func(k int, got, local []int) error {
		g := gpus[k]
		return fmt.Errorf("model %s: instance group g%d: GPUs %v, the recorded placement holds the service on plan GPU %d: %v within the pod", c.Name, g, got, g, local)
	})
	if err != nil {
		return err
	}
	return rb.service(params, count, int(c.MaxBatchSize))
}

func (rb *reader) kserve(data []byte) error {
	kind, err := export.KindOf(data)
	if err != nil {
		return err
	}
	switch kind {
	case "InferenceService":
		s, params, err := export.ReadFixedService(data, "dyorc")
		if err != nil {
			return err
		}
		return rb.service(params, s.Spec.Predictor.MinReplicas, export.BatcherBatch(s.Spec.Predictor.Batcher))
	case "InferenceGraph":
		var g export.InferenceGraph
		if err := yaml.UnmarshalStrict(data, &g); err != nil {
			return err
		}
		params := export.AnnotationParams(g.Metadata.Annotations, "dyorc")
		if err := rb.app(params); err != nil {
			return fmt.Errorf("graph %s: %w", g.Metadata.Name, err)
		}
		a := rb.apps[params[ParamApp]]
		want := rounds(a) * len(steps(a))
		if n := len(g.Spec.Nodes["root"].Steps); n != want {
			return fmt.Errorf("graph %s: root has %d steps, the workflow unrolls to %d", g.Metadata.Name, n, want)
		}
	}
	return nil
}

func (rb *reader) ray(data []byte) error {
	return export.EachRayDeployment(data, func(d rayDeployment) error {
		u := d.UserConfig
		if u.Record != nil {
			for _, w := range u.Workflows {
				if err := rb.app(map[string]string{ParamApp: w.App, ParamPlan: export.MustJSON(*u.Record), ParamWorkflow: export.MustJSON(w.Workflow)}); err != nil {
					return err
				}
			}
			return nil
		}
		if d.RayActorOptions.NumGPUs != 1 {
			return fmt.Errorf("num_gpus %g: a service replica takes one GPU", d.RayActorOptions.NumGPUs)
		}
		return rb.service(u.Placement, export.RayReplicas(d), u.MaxBatchSize)
	})
}

// result assembles the plan section: deployment indices must be 0..n-1, GPUs within the
// recorded cluster, every workflow service deployed.
func (rb *reader) result() (*Exported, error) {
	if rb.rec == nil {
		return nil, fmt.Errorf("no workflow (%s) in the files", ParamWorkflow)
	}
	dp := &dyorcsec.DyOrcPlan{Policy: rb.rec.Policy, Params: rb.rec.Params, Deployments: make([]dyorcsec.ServiceDeployment, len(rb.deps))}
	held := map[int][]string{}
	deployed := map[string]bool{}
	for i, d := range rb.deps {
		if i >= len(dp.Deployments) {
			return nil, fmt.Errorf("deployment index %d of %d: the indices are not 0..%d", i, len(rb.deps), len(rb.deps)-1)
		}
		dp.Deployments[i] = d.d
		deployed[d.d.Service] = true
		for _, g := range d.gpus {
			if g >= rb.rec.GPUs {
				return nil, fmt.Errorf("service %s: GPU %d: the plan's cluster has %d GPUs", d.d.Service, g, rb.rec.GPUs)
			}
			held[g] = append(held[g], d.d.Service)
		}
	}
	if rb.rec.Placement {
		gs := slices.Sorted(maps.Keys(held))
		for _, g := range gs {
			s := held[g]
			slices.Sort(s)
			dp.Placement = append(dp.Placement, dyorcsec.GPUServices{GPU: g, Services: s})
		}
	}
	for name, a := range rb.apps {
		for _, st := range steps(a) {
			for _, svc := range append([]string{st.Service}, keys(st.Choice)...) {
				if svc != "" && !deployed[svc] {
					return nil, fmt.Errorf("app %s: step %s: service %s has no exported deployment", name, st.ID, svc)
				}
			}
		}
	}
	return &Exported{Plan: dp, Apps: rb.apps}, nil
}

func keys(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
