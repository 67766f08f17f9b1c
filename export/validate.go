package export

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"google.golang.org/protobuf/encoding/prototext"
	"sigs.k8s.io/yaml"

	"github.com/plan-dev/plan/export/internal/tritonpb"
)

//go:embed schema/*.json
var schemaFS embed.FS

// RayConfigFile is the name of the Ray Serve config file in an export.
const RayConfigFile = "serve-config.yaml"

// ReadmeFile is an export's README: what the user supplies before deploying.
const ReadmeFile = "README.md"

// VLLMModelFile is the engine-arguments file of a Triton vLLM-backend model
// (<model>/1/model.json).
const VLLMModelFile = "model.json"

// Validate checks every exported file against its target's schema: config.pbtxt through a
// protobuf text-format parse into tritonpb.ModelConfig (unknown fields and enum values are
// errors), KServe manifests and the Ray Serve config through the JSON Schemas in schema/
// (written from the documented fields; additionalProperties false everywhere), and a Triton
// vLLM model's model.json through the vLLM engine-arguments schema. Every problem
// is reported, each naming the file.
//
// Then the run-time rules (rules.go): what the targets refuse or get wrong on a real cluster
// although the schema passes.
func Validate(files Files) error { return ValidateFor(files, false) }

// ValidateFor is Validate; deploy adds the rules of a repository about to be deployed (the
// files the user supplies, such as a coordinator's model.py).
func ValidateFor(files Files, deploy Deployable) error { return Classic.Validate(files, deploy) }

// Validate is the package's Validate with the extension points of r's targets: the schemas
// of the kinds they supply (SchemaProvider) and their run-time rules (RuleChecker), which
// run after the shared ones.
func (r *Registry) Validate(files Files, deploy Deployable) error {
	var errs []string
	for _, name := range files.Names() {
		data := files[name]
		switch {
		case path.Base(name) == "config.pbtxt":
			if _, err := ParseTriton(data); err != nil {
				errs = append(errs, fmt.Sprintf("%s: %v", name, err))
			}
		case strings.HasSuffix(name, ".yaml"), path.Base(name) == VLLMModelFile:
			// JSON is YAML: model.json goes through the same schema check. A file of several
			// documents (deploy/) checks each; errors name the document from its second on.
			ds := Documents(data)
			if len(ds) == 0 {
				errs = append(errs, fmt.Sprintf("%s: empty: no document", name))
			}
			for i, d := range ds {
				at := name
				if len(ds) > 1 {
					at = fmt.Sprintf("%s (document %d)", name, i+1)
				}
				for _, e := range r.validateYAML(name, d) {
					errs = append(errs, fmt.Sprintf("%s: %s", at, oneLine(e)))
				}
			}
		case strings.HasSuffix(name, ".onnx"), path.Base(name) == ".keep", name == ReadmeFile, path.Base(name) == "model.py":
		default:
			errs = append(errs, fmt.Sprintf("%s: no schema for this file", name))
		}
	}
	if len(errs) == 0 {
		errs = r.runtimeRules(files, deploy)
	}
	if len(errs) > 0 {
		return fmt.Errorf("export: %d problem(s) in %d file(s):\n%s", len(errs), filesNamed(errs), strings.Join(errs, "\n"))
	}
	return nil
}

// filesNamed is how many files errs name: each opens with its file, "name: …" or, in a file
// of several documents, "name (document i): …".
func filesNamed(errs []string) int {
	files := map[string]bool{}
	for _, e := range errs {
		f, _, _ := strings.Cut(e, ": ")
		f, _, _ = strings.Cut(f, " (document ")
		files[f] = true
	}
	return len(files)
}

// Documents splits a YAML stream into its documents (at lines that are "---"), dropping
// empty ones.
func Documents(data []byte) [][]byte {
	var out [][]byte
	for _, d := range bytes.Split(append([]byte("\n"), data...), []byte("\n---\n")) {
		if len(bytes.TrimSpace(d)) > 0 {
			out = append(out, bytes.TrimPrefix(d, []byte("\n")))
		}
	}
	return out
}

// ParseTriton parses a config.pbtxt strictly.
func ParseTriton(data []byte) (*tritonpb.ModelConfig, error) {
	var c tritonpb.ModelConfig
	if err := (prototext.UnmarshalOptions{}).Unmarshal(data, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// SchemaFor names the shared schema (schema/) of a YAML document: the Kubernetes objects of
// every target's deploy/. A target's own kinds are its SchemaProvider's.
func SchemaFor(name string, doc map[string]any) (string, error) {
	switch doc["kind"] {
	case "ScaledObject":
		return "scaledobject.schema.json", nil
	case "HorizontalPodAutoscaler":
		return "hpa.schema.json", nil
	case "Deployment":
		return "deployment.schema.json", nil
	case "Service":
		return "service.schema.json", nil
	case "ConfigMap":
		return "configmap.schema.json", nil
	}
	return "", fmt.Errorf("kind %s: not a manifest plan exports", echo(doc["kind"]))
}

// SchemaFor of the classic targets: Triton's vLLM model.json, KServe's services and graphs,
// Ray Serve's config (schema/; a Schema without JSON names one there).
func (tritonTarget) SchemaFor(name string, _ map[string]any) (Schema, bool) {
	return Schema{Name: "triton-vllm-model.schema.json"}, path.Base(name) == VLLMModelFile
}

func (kserveTarget) SchemaFor(_ string, doc map[string]any) (Schema, bool) {
	switch doc["kind"] {
	case "InferenceService":
		return Schema{Name: "inferenceservice.schema.json"}, true
	case "InferenceGraph":
		return Schema{Name: "inferencegraph.schema.json"}, true
	}
	return Schema{}, false
}

func (rayTarget) SchemaFor(name string, _ map[string]any) (Schema, bool) {
	return Schema{Name: "ray-serve.schema.json"}, path.Base(name) == RayConfigFile
}

func (r *Registry) validateYAML(name string, data []byte) []string {
	// Strict: a key given twice is an error, not the last one winning (as everywhere else
	// plan reads a file).
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return []string{err.Error()}
	}
	var doc map[string]any
	if err := json.Unmarshal(js, &doc); err != nil {
		return []string{err.Error()}
	}
	// A file a target names (Ray's config, Triton's model.json) goes by the target's
	// schema, whatever kind it says; then the shared kinds, then the targets' own.
	for _, t := range r.list {
		if sp, ok := t.(SchemaProvider); ok {
			if s, ok := sp.SchemaFor(name, doc); ok {
				if s.JSON == nil {
					return validateAgainst(s.Name, js)
				}
				return validateAgainstOf(t.Name()+"/"+s.Name, s.JSON, js)
			}
		}
	}
	sf, err := SchemaFor(name, doc)
	if err != nil {
		return []string{err.Error()}
	}
	return validateAgainst(sf, js)
}

// oneLine joins a multi-line error (a YAML decoder lists its unmarshal errors one per line
// under a header ending in a colon) into one, so every line of Validate's error names its
// file: "yaml: unmarshal errors: line 10: …; line 12: …".
func oneLine(e string) string {
	var b strings.Builder
	for _, p := range strings.Split(e, "\n") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if b.Len() > 0 {
			if strings.HasSuffix(b.String(), ":") {
				b.WriteString(" ")
			} else {
				b.WriteString("; ")
			}
		}
		b.WriteString(p)
	}
	return b.String()
}
