package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/plan-dev/plan/export"
	"github.com/plan-dev/plan/export/targets"
	runexport "github.com/plan-dev/plan/internal/run/export"
)

type exportOptions struct {
	to         string
	out        string
	force      bool
	model      string
	name       string
	storageURI string
	importPath string
	cluster    string
	check      bool
	prometheus string
	image      string
}

func newExportCmd(app *App) *cobra.Command {
	o := &exportOptions{}
	cmd := &cobra.Command{
		Use:   "export PLAN --to triton|kserve|ray|inference-gateway -o DIR | export --check DIR",
		Short: "Export a plan to Triton, KServe, Ray Serve or inference-gateway files",
		Long: `export writes a plan as the files of the serving system you already run, through the
exporter the plan's system registers for the target:

  triton  a model repository: <model>/config.pbtxt per exported model (batching, instance
          groups pinned per GPU within a server as the plan places replicas, the placement
          in parameters;
          README.md says what a Python coordinator's 1/model.py must do; an LLM
          instance on the vLLM backend with its engine arguments in 1/model.json); with
          --model the ONNX partitions and one ensemble per pipeline (partitioned plans);
  kserve  InferenceServices (replicas with KEDA autoscaling from the plan's capacity, a
          batcher where the plan batches, or an LLM's vLLM engine arguments; the GPU type's
          node selector) and InferenceGraphs for what the plan routes between models;
  ray     serve-config.yaml: deployments (autoscaling_config for GPU deployments,
          fractional num_gpus for vGPU slices, the GPU type as accelerator_type, batching or
          vLLM engine arguments and the plan's routing tables in user_config);
  inference-gateway  (LLM plans) the Kubernetes Gateway API Inference Extension and llm-d
          router objects: a vLLM Deployment per instance (the engine flags of the kserve
          export; llm-d's routing sidecar on decode instances), an InferencePool per model,
          its endpoint picker's configuration in epp/ (queue scoring; prefix-cache-aware
          scoring where the plan assumes prefix caching; prefill/decode profiles, filters
          and decider for disaggregated plans) and an InferenceObjective per request class
          with its priority (interactive classes first, then tighter SLOs).

Targets are plug-ins of one registry (export/targets): a system supplies its plan's layout
and every target that renders it is one of its exporters.

Every triton, kserve and ray export also writes deploy/: the plan serve coordinator in front
of the workers (coordinator.yaml: a ConfigMap with the plan and the endpoints file, a
Deployment running 'plan serve --workers remote' with both mounted, a Service; the image is
built from deploy/Dockerfile), and for Triton a Deployment of Triton servers per model with
a KEDA ScaledObject (deploy/autoscale/) and an HPA autoscaling/v2 variant
(deploy/autoscale-hpa/): apply one of the two. KServe predictors scale through KServe's KEDA
integration, Ray deployments by autoscaling_config. Replica ranges run from what the plan's
rates need to what it allocates; thresholds are a replica's capacity at the SLO from the
plan's prediction (sustained_rps), else its throughput; LLM instances scale on
vllm:num_requests_running + vllm:num_requests_waiting against max_num_seqs. Triton GPU ids
count within a server (gpus[].per_server): a pool larger than a server runs on identical
servers.

Each system maps its plan to these as far as the target can express it (pools and pipelines,
pipeline modules, cascade gears, workflows, LLM instances); what a target cannot do on its
own — switching gears on measured QPS, re-planning queues — is said in the files, with the
plan's tables recorded for the coordinator that does it.

GPU types are selected by the labels real clusters carry: nvidia.com/gpu.product as NVIDIA's
GPU feature discovery writes it (NVIDIA-L4, Tesla-P4, NVIDIA-A100-SXM4-80GB, ...) and Ray's
accelerator_type (L4, P4, A100, ...). A cluster file's gpus[].node_labels (the plan's embedded
cluster, or --cluster) replaces a type's selector; a type with neither is an error (exit 2).

Output is deterministic. Every file is checked against the target's schema before anything
is written; DIR is then written atomically. With --output json: {plan, system, target, dir,
files}. Exit 2: the plan cannot be read, its system has no exporter for the target, a GPU type
has no known label and no node_labels (kserve, ray), or DIR exists and is not empty (use
--force to replace it).

With --check DIR, export writes nothing: it validates an existing export directory (after you
edited it or supplied a coordinator's model.py) against the same schemas and run-time rules,
plus the files a deployment needs, and reads an inference-gateway export back into the plan's
instances, pools and objectives (printing what it read); exit 2 names each file, field and
value that would fail.`,
		Example: `  plan export plan.json --to kserve -o manifests/ --cluster cluster.yaml
  plan export plan.json --to triton -o repo/
  plan export plan.json --to triton -o repo/ --model resnet50.onnx --force
  plan export plan.json --to kserve -o manifests/ --storage-uri s3://models/plan
  plan export plan.json --to ray -o ray/
  plan export testdata/export/qlm/plan.json --to inference-gateway -o gateway/
  plan export --check repo/`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runexport.Run(cmd.Context(), runexport.Args{Path: args[0], To: o.to, Out: o.out, Force: o.force, Model: o.model,
				Name: o.name, StorageURI: o.storageURI, ImportPath: o.importPath, Cluster: o.cluster, Check: o.check,
				Prometheus: o.prometheus, Image: o.image, Systems: app.Systems}, &app.IO)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.to, "to", "", "target: "+strings.Join(targets.Registry().Names(), ", "))
	f.StringVarP(&o.out, "out", "o", "", "output directory")
	f.BoolVar(&o.force, "force", false, "replace an existing non-empty output directory")
	f.StringVar(&o.model, "model", "", "ONNX model the plan serves: write each partition beside its config")
	f.StringVar(&o.name, "name", "", "name prefix of the exported objects (default: the plan's metadata.name, or its file name)")
	f.StringVar(&o.storageURI, "storage-uri", "", "KServe storageUri prefix of the Triton repository (default pvc://plan-models)")
	f.StringVar(&o.importPath, "import-path", "", "Ray Serve import_path of the application builder (default plan_ray:app)")
	f.BoolVar(&o.check, "check", false, "validate the existing export directory DIR (schemas and run-time rules, user-supplied files included) instead of exporting")
	f.StringVar(&o.prometheus, "prometheus", "", "Prometheus the autoscalers' triggers query (default "+export.DefaultPrometheus+")")
	f.StringVar(&o.image, "image", "", "image of the plan serve coordinator in deploy/ (default "+export.DefaultImage+", built from deploy/Dockerfile)")
	f.StringVar(&o.cluster, "cluster", "", "cluster file whose gpus[].node_labels select each GPU type's nodes (default: the plan's embedded cluster)")
	return cmd
}
