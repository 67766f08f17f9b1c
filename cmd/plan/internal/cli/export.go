package cli

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/plan-dev/plan/export"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/internal/system"
	"github.com/plan-dev/plan/profiler/onnx"
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
		Use:   "export PLAN --to triton|kserve|ray -o DIR | export --check DIR",
		Short: "Export a plan to Triton, KServe or Ray Serve files",
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
          vLLM engine arguments and the plan's routing tables in user_config).

Every export also writes deploy/: the plan serve coordinator in front of the workers
(coordinator.yaml: a ConfigMap with the plan and the endpoints file, a Deployment running
'plan serve --workers remote' with both mounted, a Service; the image is built from
deploy/Dockerfile), and for Triton a Deployment of Triton servers per model with a KEDA
ScaledObject (deploy/autoscale/) and an HPA autoscaling/v2 variant (deploy/autoscale-hpa/):
apply one of the two. KServe predictors scale through KServe's KEDA integration, Ray
deployments by autoscaling_config. Replica ranges run from what the plan's rates need to
what it allocates; thresholds are a replica's capacity at the SLO from the plan's prediction
(sustained_rps), else its throughput; LLM instances scale on vllm:num_requests_running +
vllm:num_requests_waiting against max_num_seqs. Triton GPU ids count within a server
(gpus[].per_server): a pool larger than a server runs on identical servers.

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
plus the files a deployment needs; exit 2 names each file, field and value that would fail.`,
		Example: `  plan export plan.json --to kserve -o manifests/ --cluster cluster.yaml
  plan export plan.json --to triton -o repo/
  plan export plan.json --to triton -o repo/ --model resnet50.onnx --force
  plan export plan.json --to kserve -o manifests/ --storage-uri s3://models/plan
  plan export plan.json --to ray -o ray/
  plan export --check repo/`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.check {
				return runExportCheck(app, o, args[0])
			}
			return runExport(app, o, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.to, "to", "", "target: "+strings.Join(export.Targets, ", "))
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

// exportReport is `plan export --output json`.
type exportReport struct {
	Plan   string   `json:"plan"`
	System string   `json:"system"`
	Target string   `json:"target"`
	Dir    string   `json:"dir"`
	Files  []string `json:"files"`
}

// exporterFor finds the system's exporter for target.
func exporterFor(sys system.System, target string) (*export.Exporter, error) {
	for i := range sys.Exporters {
		if sys.Exporters[i].Target == target {
			return &sys.Exporters[i], nil
		}
	}
	return nil, fmt.Errorf("system %s has no exporter for target %s", sys.Name, target)
}

func runExport(app *App, o *exportOptions, path string) error {
	if !slices.Contains(export.Targets, o.to) {
		return run.UsageErrorf("--to: %q: must be one of %s", o.to, strings.Join(export.Targets, ", "))
	}
	if o.out == "" {
		return run.UsageErrorf("-o: an output directory is required")
	}
	plan, err := formats.ReadIntoWith[*formats.Plan](path, app.Systems.Sections())
	if err != nil {
		return run.UsageError(err)
	}
	sys, err := app.Systems.ForPlan(plan)
	if err != nil {
		return run.UsageErrorf("%s: %v", path, err)
	}
	ex, err := exporterFor(sys, o.to)
	if err != nil {
		return run.UsageErrorf("%s: %v", path, err)
	}
	opts := export.Options{Name: o.name, StorageURI: o.storageURI, ImportPath: o.importPath, Prometheus: o.prometheus, Image: o.image}
	if e := plan.Provenance.Embedded; e != nil {
		opts.NodeLabels = export.NodeLabelsOf(e.Cluster)
		opts.PerServer = export.PerServerOf(e.Cluster)
	}
	if o.cluster != "" {
		c, err := formats.ReadInto[*formats.Cluster](o.cluster)
		if err != nil {
			return run.UsageError(err)
		}
		for gpu, n := range export.PerServerOf(c) {
			if opts.PerServer == nil {
				opts.PerServer = map[string]int{}
			}
			opts.PerServer[gpu] = n
		}
		for gpu, ls := range export.NodeLabelsOf(c) {
			if opts.NodeLabels == nil {
				opts.NodeLabels = map[string]map[string]string{}
			}
			opts.NodeLabels[gpu] = ls
		}
	}
	if opts.Name == "" {
		opts.Name = plan.Metadata.Name
	}
	if opts.Name == "" {
		opts.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	if o.model != "" {
		if opts.Model, err = onnx.Load(o.model); err != nil {
			return run.UsageErrorf("--model %s: %v", o.model, err)
		}
	}
	files, err := ex.Export(plan, opts)
	if err != nil {
		return run.UsageErrorf("%s: export to %s: %v", path, o.to, err)
	}
	if err := export.Validate(files); err != nil {
		return err // a bug of the exporter, not of the input: exit 1
	}
	if err := export.Write(o.out, files, o.force); err != nil {
		return run.UsageError(err)
	}
	if app.JSONOutput() {
		b, err := json.MarshalIndent(exportReport{Plan: path, System: sys.Name, Target: o.to, Dir: o.out, Files: files.Names()}, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintln(app.Out, string(b))
		return nil
	}
	if !app.Quiet {
		fmt.Fprintf(app.Out, "exported %s (%s) to %s: %d file(s) in %s\n", path, sys.Name, o.to, len(files), o.out)
	}
	return nil
}

// maxCheckFile bounds what --check reads of one file: configs and manifests are small; model
// files (.onnx) are listed, never read.
const maxCheckFile = 16 << 20

// runExportCheck is `plan export --check DIR`: the export's validation applied to a
// directory on disk, with the rules of a deployable repository.
func runExportCheck(app *App, o *exportOptions, dir string) error {
	if o.to != "" || o.out != "" || o.model != "" || o.cluster != "" || o.prometheus != "" || o.image != "" {
		return run.UsageErrorf("--check %s: validates an existing directory; it takes no --to, -o, --model or --cluster", dir)
	}
	files := export.Files{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		// A deployable repository holds regular files only: a symbolic link would make the
		// check read (and pass) a file outside the directory, and a named pipe or a device
		// would block or never end. Each is refused with what it is, never skipped.
		if t := d.Type(); !t.IsRegular() {
			what := "not a regular file (" + t.String() + ")"
			switch {
			case t&fs.ModeSymlink != 0:
				target, _ := os.Readlink(p)
				what = "a symbolic link to " + formats.EchoName(target)
			case t&fs.ModeNamedPipe != 0:
				what = "a named pipe (FIFO)"
			case t&(fs.ModeDevice|fs.ModeCharDevice) != 0:
				what = "a device"
			}
			return fmt.Errorf("%s: %s: a deployable repository holds regular files only", formats.EchoName(p), what)
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if strings.HasSuffix(rel, ".onnx") {
			files[rel] = nil
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Size() > maxCheckFile {
			return fmt.Errorf("%s: %d bytes: larger than any file plan exports (%d)", p, info.Size(), maxCheckFile)
		}
		// ReadBytesLimit checks again what it opens (the entry may have been replaced since).
		b, err := formats.ReadBytesLimit(p, maxCheckFile)
		files[rel] = b
		return err
	})
	if err != nil {
		return run.UsageErrorf("--check: %v", err)
	}
	if len(files) == 0 {
		return run.UsageErrorf("--check %s: no files", dir)
	}
	if err := export.ValidateFor(files, true); err != nil {
		return run.UsageErrorf("%s: %v", dir, err)
	}
	if !app.Quiet {
		fmt.Fprintf(app.Out, "ok: %s: %d file(s) pass the schemas and the run-time rules\n", dir, len(files))
	}
	return nil
}
