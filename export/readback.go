package export

import (
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/plan-dev/plan/export/internal/tritonpb"
)

// ReadBack recovers the placements an export records — the `plan import`-style reading the
// round-trip tests use — from the files alone: Triton model configs (ensembles skipped) by
// their parameters, max_batch_size and instance_group count; InferenceServices by their
// annotations, replica counts and batcher; Ray deployments by user_config, num_replicas and
// num_gpus. The record's own count, batch and slice are cross-checked against the target's
// fields, so a file whose native settings disagree with the plan is an error.
func ReadBack(target string, files Files) ([]Placement, error) {
	var out []Placement
	err := ReadFiles(target, files, Readers{
		Triton: func(_ string, data []byte) error {
			pl, ok, err := readTriton(data)
			if ok && err == nil {
				out = append(out, pl)
			}
			return err
		},
		KServe: func(_ string, data []byte) error {
			pl, ok, err := readKServe(data)
			if ok && err == nil {
				out = append(out, pl)
			}
			return err
		},
		Ray: func(_ string, data []byte) error {
			ps, err := readRay(data)
			out = append(out, ps...)
			return err
		},
	})
	if err != nil {
		return nil, err
	}
	SortPlacements(out)
	return out, nil
}

// Readers are one system's readers of the files each target writes, by target name: a
// reader gets the file's path in the export and its contents (Triton's model configs,
// KServe's YAML manifests, Ray Serve's config: the files the target Owns).
type Readers map[string]func(name string, data []byte) error

// ReadFiles is the walk every ReadBack shares: each file of an export, in name order and
// deploy/ left out (the coordinator and autoscalers, read by ReadScale), that the classic
// target named target owns goes to its reader (none: the files are passed over); the first
// error stops the walk, naming the file. An unknown target is an error.
func ReadFiles(target string, files Files, r Readers) error {
	t, ok := Classic.Lookup(target)
	if !ok {
		return fmt.Errorf("export target %q: not one of %s", target, strings.Join(Classic.Names(), ", "))
	}
	read := r[target]
	for _, name := range files.Names() {
		if IsDeploy(name) || !t.Owns(name) || read == nil {
			continue
		}
		if err := read(name, files[name]); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

func readTriton(data []byte) (Placement, bool, error) {
	c, params, err := ReadTriton(data)
	if err != nil {
		return Placement{}, false, err
	}
	if c.Platform == "ensemble" {
		return Placement{}, false, nil
	}
	pl, err := placementFrom(params)
	if err != nil {
		return pl, false, err
	}
	count := TritonInstances(c)
	if v, ok := params[ParamServers]; ok {
		servers, err := strconv.Atoi(v)
		if err != nil || servers < 1 {
			return pl, false, fmt.Errorf("parameters.%s: %q: must be an integer >= 1", ParamServers, v)
		}
		count *= servers
	}
	if count != pl.Count || int(c.MaxBatchSize) != pl.Batch {
		return pl, false, fmt.Errorf("instance count %d, max_batch_size %d: the recorded placement says %d, %d", count, c.MaxBatchSize, pl.Count, pl.Batch)
	}
	return pl, true, nil
}

func readKServe(data []byte) (Placement, bool, error) {
	kind, err := KindOf(data)
	if err != nil {
		return Placement{}, false, err
	}
	if kind != "InferenceService" {
		return Placement{}, false, nil
	}
	var s InferenceService
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		return Placement{}, false, err
	}
	params := map[string]string{}
	for k, v := range s.Metadata.Annotations {
		if rest, ok := strings.CutPrefix(k, labelPrefix); ok {
			params["plan."+rest] = v
		}
	}
	pl, err := placementFrom(params)
	if err != nil {
		return pl, false, err
	}
	p := s.Spec.Predictor
	if p.MaxReplicas != pl.Count || BatcherBatch(p.Batcher) != pl.Batch || len(p.NodeSelector) == 0 {
		return pl, false, fmt.Errorf("replicas/batcher/node selector disagree with the recorded placement %s", pl)
	}
	return pl, true, nil
}

func readRay(data []byte) ([]Placement, error) {
	var c RayConfig
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, err
	}
	var out []Placement
	for _, a := range c.Applications {
		for _, d := range a.Deployments {
			pl, err := placementFrom(d.UserConfig.Placement)
			if err != nil {
				return nil, fmt.Errorf("application %s, deployment %s: %w", a.Name, d.Name, err)
			}
			frac := strconv.FormatFloat(roundFrac(1/float64(max(pl.VGPU, 1))), 'g', -1, 64)
			if RayReplicas(d) != pl.Count || d.UserConfig.MaxBatchSize != pl.Batch ||
				strconv.FormatFloat(d.RayActorOptions.NumGPUs, 'g', -1, 64) != frac {
				return nil, fmt.Errorf("application %s, deployment %s: num_replicas/max_batch_size/num_gpus disagree with the recorded placement %s", a.Name, d.Name, pl)
			}
			out = append(out, pl)
		}
	}
	return out, nil
}

// TritonInstances counts the instances a config starts: count on each listed GPU (an
// instance group without gpus counts once; Validate refuses it for KIND_GPU).
func TritonInstances(c *tritonpb.ModelConfig) int {
	n := 0
	for _, g := range c.InstanceGroup {
		n += int(g.Count) * max(len(g.Gpus), 1)
	}
	return n
}

// BatcherBatch is the batch a KServe predictor forms: the batcher's, 1 without one.
func BatcherBatch(b *Batcher) int {
	if b == nil {
		return 1
	}
	return b.MaxBatchSize
}

// KindOf is a Kubernetes manifest's kind, read before decoding it strictly as that kind's
// type: the manifests of an export mix InferenceServices, InferenceGraphs and others.
func KindOf(data []byte) (string, error) {
	var probe struct {
		Kind string `json:"kind"`
	}
	if err := yaml.Unmarshal(data, &probe); err != nil {
		return "", err
	}
	return probe.Kind, nil
}

// DataReader adapts a reader of a file's contents alone to Readers.
func DataReader(read func(data []byte) error) func(name string, data []byte) error {
	return func(_ string, data []byte) error { return read(data) }
}
