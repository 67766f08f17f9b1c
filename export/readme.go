package export

import (
	"fmt"
	"strings"
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
