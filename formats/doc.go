// Package formats defines plan's file formats — Profile, Cluster, Workload, Plan and Trace —
// with strict decoding (unknown fields are errors), semantic validation that reports every
// problem with its file, field path and value, JSON Schema generation and atomic writes.
//
// Every file carries apiVersion "plan/v1" and a kind. Human-written inputs (clusters,
// workloads) may be YAML or JSON; machine outputs (profiles, plans, traces) are JSON.
// Durations in human files are strings such as "200ms"; profiled latencies are microseconds
// in fields whose names end in _us.
//
// Reading a file has three layers, each reporting every problem it finds as a FieldError
// (`cluster.yaml: gpus[1].count: -3: must be >= 0`):
//   - Parse decodes strictly: unreadable YAML/JSON, unknown or missing fields, wrong types
//     and non-finite numbers (YAML's .nan/.inf) are ErrDecode problems with their paths;
//   - Validate (a method of every Document) checks the kind's semantic rules;
//   - CheckSet checks several documents against each other (models, GPU types, targets).
//
// Decode and ReadFile do the first two; DecodeInto and ReadInto also require a kind.
// Schema generates the JSON Schema of a kind from the Go types; the published copies live
// in the repository's schema/ folder and a test fails when they drift.
package formats

// APIVersion is the only file-format version this build reads and writes.
const APIVersion = "plan/v1"

// Kinds of documents.
const (
	KindProfile  = "Profile"
	KindCluster  = "Cluster"
	KindWorkload = "Workload"
	KindPlan     = "Plan"
	KindTrace    = "Trace"
)

// Kinds lists every kind this build understands, in a stable order.
var Kinds = []string{KindProfile, KindCluster, KindWorkload, KindPlan, KindTrace}

// TypeMeta is embedded at the top of every document.
type TypeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// Metadata names a document. It deliberately holds no timestamps so that the same inputs
// give byte-identical outputs.
type Metadata struct {
	Name        string            `json:"name,omitempty"`
	Description string            `json:"description,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
}
