package export

import (
	"strings"
	"testing"
)

// TestRuntimeRules breaks one run-time rule at a time in a valid export and expects
// Validate to name the file, the field and the value. Every broken file
// still passes its schema: only the rule catches it.
func TestRuntimeRules(t *testing.T) {
	o := Options{}.Defaults()
	render := map[string]func([]Group, Options) (Files, error){Triton: TritonFiles, KServe: KServeFiles, Ray: RayFiles}
	const isvc, graph = "inferenceservice-p-m-p0-s0.yaml", "inferencegraph-p-m-p0.yaml"
	cases := []struct {
		name, target, file, old, new string
		deploy                       Deployable
		want                         string
	}{
		{"triton gpus", Triton, "p-m-p0-s0/config.pbtxt", "  gpus: [ 0 ]\n", "", false,
			"p-m-p0-s0/config.pbtxt: instance_group[0].gpus: []: KIND_GPU with count 2 and no gpus starts 2 instance(s) on every GPU"},
		{"triton count", Triton, "p-m-p0-s1/config.pbtxt", "count: 1\n", "count: 0\n", false,
			"p-m-p0-s1/config.pbtxt: instance_group[0].count: 0: must be >= 1"},
		{"ensemble step", Triton, "p-m-p0/config.pbtxt", `model_name: "p-m-p0-s1"`, `model_name: "p-m-p0-s9"`, false,
			`p-m-p0/config.pbtxt: ensemble_scheduling.step[1].model_name: "p-m-p0-s9": no such model in the repository`},
		{"python model.py", Triton, "p-m-p0/config.pbtxt", `platform: "ensemble"`, `backend: "python"`, true,
			`p-m-p0/config.pbtxt: backend: "python": p-m-p0/1/model.py is missing`},
		{"batcher maxLatency", KServe, isvc, "maxLatency: 1\n", "maxLatency: 0\n", false,
			isvc + ": spec.predictor.batcher.maxLatency: 0: KServe's agent exits"},
		{"node selector", KServe, isvc, "nvidia.com/gpu.product: NVIDIA-L4", "nvidia.com/gpu.product: L4", false,
			isvc + `: spec.predictor.nodeSelector.nvidia.com/gpu.product: "L4": no node carries plan's GPU name; GPU feature discovery labels these nodes "NVIDIA-L4"`},
		{"replicas", KServe, isvc, "minReplicas: 3\n", "minReplicas: 4\n", false,
			isvc + ": spec.predictor.minReplicas/maxReplicas: 4/3"},
		{"scale metric", KServe, isvc, "minReplicas: 3\n", "minReplicas: 3\n    scaleMetric: rps\n", false,
			isvc + `: spec.predictor.scaleMetric/scaleTarget: "rps"/0: set both or neither`},
		{"graph service", KServe, graph, "serviceName: p-m-p0-s1", "serviceName: p-m-p0-s9", false,
			graph + `: spec.nodes.root.steps[1].serviceName: "p-m-p0-s9": no InferenceService of that name`},
		{"ray custom resource", Ray, RayConfigFile, "accelerator_type: L4\n", "accelerator_type: L4\n      resources:\n        L4: 0.5\n", false,
			RayConfigFile + ": applications[0].deployments[0] (p-m-p0-s0).ray_actor_options.resources.L4: 0.5: a custom resource exists only on nodes started with --resources"},
		{"ray accelerator", Ray, RayConfigFile, "      accelerator_type: L4\n", "", false,
			RayConfigFile + `: applications[0].deployments[0] (p-m-p0-s0).ray_actor_options.accelerator_type: "": num_gpus 0.5 on any GPU type`},
		{"ray num_gpus", Ray, RayConfigFile, "num_gpus: 0.5\n", "num_gpus: 1.5\n", false,
			RayConfigFile + ": applications[0].deployments[0] (p-m-p0-s0).ray_actor_options.num_gpus: 1.5: Ray takes fractions of one GPU only"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := render[c.target](testGroups(), o)
			if err != nil {
				t.Fatal(err)
			}
			if err := ValidateFor(f, c.deploy); err != nil {
				t.Fatalf("the unbroken export fails: %v", err)
			}
			s := string(f[c.file])
			if !strings.Contains(s, c.old) {
				t.Fatalf("%s has no %q:\n%s", c.file, c.old, s)
			}
			f[c.file] = []byte(strings.Replace(s, c.old, c.new, 1))
			err = ValidateFor(f, c.deploy)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v\nwant an error containing %q", err, c.want)
			}
		})
	}
}
