package export

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Coordinator is a Python-backend (BLS) model of a Triton export: a front that decides what
// Triton's ensembles cannot (a cascade's gear, a workflow's next step, QLM's queues). plan
// writes its config.pbtxt with the plan's record in parameters; the user writes its
// 1/model.py, and the export's README.md says exactly what it must do.
type Coordinator struct {
	// Model is the model's name (its directory in the repository).
	Model string
	// Params are the config parameters that carry the plan's record (JSON strings).
	Params []string
	// Does says what execute() must do, one step a line.
	Does []string
}

// CoordinatorReadme renders README.md for a Triton export with coordinators: the file each
// needs, the Python backend's interface it implements, and what it must do. `plan export
// --check` fails until every model.py is there.
// unsupported says what Triton cannot express of the system (the coordinator's reason).
func CoordinatorReadme(system, unsupported string, cs []Coordinator) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Before you deploy this %s model repository\n\n", system)
	b.WriteString("Triton loads every model here except the coordinator(s) below, which use the Python backend\n")
	b.WriteString("(`backend: \"python\"`) and need a `model.py` that you write. Until each is in place,\n")
	b.WriteString("`plan export --check <this directory>` fails (exit 2) naming the missing file.\n")
	fmt.Fprintf(&b, "\nTriton cannot express %s: the coordinator does it from the plan's record.\n", unsupported)
	for _, c := range cs {
		fmt.Fprintf(&b, "\n## `%s/1/model.py`\n\n", c.Model)
		b.WriteString("Implement the Python backend's interface (`import triton_python_backend_utils as pb_utils`):\n\n")
		b.WriteString("- `class TritonPythonModel` with `initialize(self, args)`: parse `json.loads(args[\"model_config\"])`;\n")
		fmt.Fprintf(&b, "  the plan's record is in its `parameters` (each a `string_value`): %s.\n", quoteAll(c.Params))
		b.WriteString("- `execute(self, requests)`: for each request, read the inputs `config.pbtxt` declares and return one\n")
		b.WriteString("  `pb_utils.InferenceResponse` with its outputs. Call the other models of this repository with\n")
		b.WriteString("  `pb_utils.InferenceRequest(model_name=..., requested_output_names=[...], inputs=[...]).exec()`\n")
		b.WriteString("  (business logic scripting). What it must do:\n")
		for _, d := range c.Does {
			fmt.Fprintf(&b, "  - %s\n", d)
		}
	}
	return []byte(b.String())
}

func quoteAll(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = "`" + x + "`"
	}
	return strings.Join(q, ", ")
}

// RayReadme renders README.md for a Ray Serve export: serve-config.yaml names an
// application builder (import_path) that plan cannot write, since it is the user's model
// code; the README says what it must provide for each deployment the file configures.
func RayReadme(config []byte, importPath string) ([]byte, error) {
	var c RayConfigOf[map[string]any]
	if err := yaml.Unmarshal(config, &c); err != nil {
		return nil, err
	}
	module, attr, _ := strings.Cut(importPath, ":")
	var b strings.Builder
	b.WriteString("# Before you deploy this Ray Serve config\n\n")
	fmt.Fprintf(&b, "`serve deploy %s` imports `%s` (import_path): the module `%s` must be importable on the\n", RayConfigFile, importPath, module)
	fmt.Fprintf(&b, "cluster (runtime_env working_dir or py_modules, or the image) and `%s` must build the application\n", attr)
	b.WriteString("from your model code: one `@serve.deployment` class per deployment below, of the same name, whose\n")
	b.WriteString("`reconfigure(self, user_config)` applies the plan's settings (Ray Serve delivers `user_config` there,\n")
	b.WriteString("on start and on every redeploy). Ray places each replica on a node of its `accelerator_type`\n")
	b.WriteString("(Ray labels nodes with their GPU type itself; no custom resources are needed).\n")
	var notes []string
	for _, ln := range strings.Split(string(config), "\n") {
		rest, ok := strings.CutPrefix(ln, "# ")
		if !ok {
			break
		}
		notes = append(notes, rest)
	}
	if len(notes) > 0 {
		b.WriteString("\nFrom the config's header:\n\n> " + strings.Join(notes, "\n> ") + "\n")
	}
	for _, a := range c.Applications {
		fmt.Fprintf(&b, "\n## Application `%s` (route `%s`)\n\n", a.Name, a.RoutePrefix)
		for _, d := range a.Deployments {
			keys := slices.Sorted(maps.Keys(d.UserConfig))
			gpu := "CPU only"
			if o := d.RayActorOptions; o.NumGPUs > 0 {
				gpu = fmt.Sprintf("%g GPU of type %s", o.NumGPUs, o.AcceleratorType)
			}
			fmt.Fprintf(&b, "- `%s`: %d replica(s), %s; user_config keys %s\n", d.Name, RayReplicas(d), gpu, quoteAll(keys))
		}
	}
	return []byte(b.String()), nil
}
