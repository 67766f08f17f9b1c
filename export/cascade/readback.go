package cascade

import (
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/plan-dev/plan/export"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
)

// maxReplicas bounds the placement indices a file may name (a corrupt index must not make
// ReadBack allocate without bound).
const maxReplicas = 1 << 16

// ReadBack recovers the gear plan an export records, from the files alone: the placement
// in plan order (each replica's model and GPUs), and the gear table (every gear's QPS range,
// cascade, thresholds, replica shares and triggers; poll_ms, alpha, max_batch). Each model's
// record is cross-checked against the target's own fields (Triton instance groups and
// max_batch_size, KServe replicas and batcher, Ray num_replicas and num_gpus), so a file
// whose native settings disagree with the recorded plan is an error. It also returns the
// GPU type.
func ReadBack(target string, files export.Files) (*cascadesec.CascadePlan, string, error) {
	rb := &reader{reps: map[int]cascadesec.Replica{}}
	if err := export.ReadFiles(target, files, export.Readers{export.Triton: func(_ string, data []byte) error { return rb.triton(data) }, export.KServe: export.DataReader(rb.kserve), export.Ray: export.DataReader(rb.ray)}); err != nil {
		return nil, "", err
	}
	return rb.plan()
}

type reader struct {
	gpu   string
	table *Table
	reps  map[int]cascadesec.Replica
	gears map[int]cascadesec.Gear
}

// model records one model's replicas from its parameters; count and batch are the target's
// own replica count and largest batch, gpusPer the GPUs it gives each replica (0: unknown).
func (rb *reader) model(params map[string]string, count, batch, gpusPer int) error {
	key := params[export.ParamKey]
	_, model, ok := strings.Cut(key, "/")
	if !ok || model == "" {
		return fmt.Errorf("%s: %q: not task/model", export.ParamKey, key)
	}
	n, err1 := strconv.Atoi(params[export.ParamCount])
	b, err2 := strconv.Atoi(params[export.ParamBatch])
	if err1 != nil || err2 != nil {
		return fmt.Errorf("%s: %s / %s: %q / %q: not integers", key, export.ParamCount, export.ParamBatch, params[export.ParamCount], params[export.ParamBatch])
	}
	reps, err := parseReplicas(params[ParamReplicas])
	if err != nil {
		return fmt.Errorf("%s: %s: %w", key, ParamReplicas, err)
	}
	if n != count || n != len(reps) || b != batch {
		return fmt.Errorf("%s: %d replicas and batch %d recorded, the target's settings say %d replicas (%d listed) and batch %d", key, n, b, count, len(reps), batch)
	}
	if g := params[export.ParamGPU]; rb.gpu == "" {
		rb.gpu = g
	} else if g != rb.gpu {
		return fmt.Errorf("%s: %s %q: the other models run on %q (a gear plan has one GPU type)", key, export.ParamGPU, g, rb.gpu)
	}
	for _, r := range reps {
		if gpusPer > 0 && len(r.gpus) > gpusPer {
			return fmt.Errorf("%s: replica %d spans %d GPUs, the target gives each replica %d", key, r.index, len(r.gpus), gpusPer)
		}
		if _, dup := rb.reps[r.index]; dup {
			return fmt.Errorf("%s: placement index %d recorded twice", key, r.index)
		}
		rb.reps[r.index] = cascadesec.Replica{Model: model, GPUs: r.gpus}
	}
	return nil
}

type replica struct {
	index int
	gpus  []int
}

// parseReplicas reads "<index>:<gpu>,<gpu>;…".
func parseReplicas(s string) ([]replica, error) {
	if s == "" {
		return nil, fmt.Errorf("empty")
	}
	var out []replica
	for _, part := range strings.Split(s, ";") {
		is, gs, ok := strings.Cut(part, ":")
		i, err := strconv.Atoi(is)
		if !ok || err != nil || i < 0 || i >= maxReplicas {
			return nil, fmt.Errorf("%q: want <placement index>:<gpu>,<gpu>", part)
		}
		r := replica{index: i}
		for _, g := range strings.Split(gs, ",") {
			x, err := strconv.Atoi(g)
			if err != nil || x < 0 {
				return nil, fmt.Errorf("%q: GPU %q: not a GPU index", part, g)
			}
			r.gpus = append(r.gpus, x)
		}
		out = append(out, r)
	}
	return out, nil
}

func (rb *reader) setTable(s string) error {
	var t Table
	if err := formats.StrictUnmarshal([]byte(s), &t); err != nil {
		return fmt.Errorf("%s: %w", ParamTable, err)
	}
	if rb.table != nil && export.MustJSON(*rb.table) != export.MustJSON(t) {
		return fmt.Errorf("%s: two different gear tables", ParamTable)
	}
	rb.table = &t
	return nil
}

func (rb *reader) triton(data []byte) error {
	c, params, err := export.ReadTriton(data)
	if err != nil {
		return err
	}
	if c.Backend == "python" {
		if params[ParamTable] == "" {
			return fmt.Errorf("coordinator %s: no %s parameter", c.Name, ParamTable)
		}
		return rb.setTable(params[ParamTable])
	}
	reps, err := parseReplicas(params[ParamReplicas])
	if err != nil {
		return fmt.Errorf("model %s: %s: %w", c.Name, ParamReplicas, err)
	}
	// Each replica is the instance group r<index> pinned to exactly its GPUs, numbered
	// within the model's pod (export.PodGPUs).
	names, plan := make([]string, len(reps)), make([][]int, len(reps))
	for k, r := range reps {
		names[k], plan[k] = "r"+strconv.Itoa(r.index), r.gpus
	}
	count, err := export.TritonPinned(c, names, plan, func(k int, got, local []int) error {
		r := reps[k]
		return fmt.Errorf("model %s: instance group r%d: GPUs %v, the recorded replica runs on plan GPUs %v: %v within the pod", c.Name, r.index, got, r.gpus, local)
	})
	if err != nil {
		return err
	}
	return rb.model(params, count, int(c.MaxBatchSize), 0)
}

func (rb *reader) kserve(data []byte) error {
	kind, err := export.KindOf(data)
	if err != nil {
		return err
	}
	switch kind {
	case "InferenceService":
		s, params, err := export.ReadFixedService(data, "cascade")
		if err != nil {
			return err
		}
		p := s.Spec.Predictor
		per, err := strconv.Atoi(p.Model.Resources.Limits["nvidia.com/gpu"])
		if err != nil || per < 1 {
			return fmt.Errorf("service %s: nvidia.com/gpu limit %q: not a GPU count", s.Metadata.Name, p.Model.Resources.Limits["nvidia.com/gpu"])
		}
		return rb.model(params, p.MinReplicas, export.BatcherBatch(p.Batcher), per)
	case "InferenceGraph":
		var g export.InferenceGraph
		if err := yaml.UnmarshalStrict(data, &g); err != nil {
			return err
		}
		a := g.Metadata.Annotations
		i, err := strconv.Atoi(a[annotation("gear_index")])
		if err != nil || i < 0 || i >= maxReplicas {
			return fmt.Errorf("graph %s: %s: %q: not a gear index", g.Metadata.Name, annotation("gear_index"), a[annotation("gear_index")])
		}
		var gear cascadesec.Gear
		if err := formats.StrictUnmarshal([]byte(a[annotation("gear")]), &gear); err != nil {
			return fmt.Errorf("graph %s: %s: %w", g.Metadata.Name, annotation("gear"), err)
		}
		if n := len(g.Spec.Nodes["root"].Steps); n != len(gear.Models) {
			return fmt.Errorf("graph %s: %d steps for a cascade of %d models", g.Metadata.Name, n, len(gear.Models))
		}
		if rb.gears == nil {
			rb.gears = map[int]cascadesec.Gear{}
		}
		if _, dup := rb.gears[i]; dup {
			return fmt.Errorf("graph %s: gear %d recorded twice", g.Metadata.Name, i)
		}
		rb.gears[i] = gear
		return rb.setTable(a[annotation("switching")])
	}
	return nil
}

func (rb *reader) ray(data []byte) error {
	return export.EachRayDeployment(data, func(d rayDeployment) error {
		u := d.UserConfig
		if u.Table != nil {
			return rb.setTable(export.MustJSON(*u.Table))
		}
		per := int(d.RayActorOptions.NumGPUs)
		if float64(per) != d.RayActorOptions.NumGPUs || per < 1 {
			return fmt.Errorf("num_gpus %g: a replica takes whole GPUs", d.RayActorOptions.NumGPUs)
		}
		return rb.model(u.Placement, export.RayReplicas(d), u.MaxBatchSize, per)
	})
}

// plan assembles the gear plan: placement indices must be 0..n-1, every gear's models must
// be placed.
func (rb *reader) plan() (*cascadesec.CascadePlan, string, error) {
	if rb.table == nil {
		return nil, "", fmt.Errorf("no gear table (%s) in the files", ParamTable)
	}
	cp := &cascadesec.CascadePlan{Task: rb.table.Task, PollMs: rb.table.PollMs, Alpha: rb.table.Alpha, MaxBatch: rb.table.MaxBatch, Gears: rb.table.Gears}
	if rb.gears != nil {
		cp.Gears = make([]cascadesec.Gear, len(rb.gears))
		for i, g := range rb.gears {
			if i >= len(cp.Gears) {
				return nil, "", fmt.Errorf("gear %d of %d: the gear indices are not 0..%d", i, len(rb.gears), len(rb.gears)-1)
			}
			cp.Gears[i] = g
		}
	}
	cp.Placement = make([]cascadesec.Replica, len(rb.reps))
	placed := map[string]bool{}
	for i, r := range rb.reps {
		if i >= len(cp.Placement) {
			return nil, "", fmt.Errorf("placement index %d of %d replicas: the indices are not 0..%d", i, len(rb.reps), len(rb.reps)-1)
		}
		cp.Placement[i] = r
		placed[r.Model] = true
	}
	for gi, g := range cp.Gears {
		for _, m := range g.Models {
			if !placed[m] {
				return nil, "", fmt.Errorf("gear %d: model %s has no exported replica", gi, m)
			}
		}
	}
	return cp, rb.gpu, nil
}
