// Package formats defines plan's file formats — Profile, Cluster, Workload, Plan and Trace —
// with strict decoding (unknown fields are errors), semantic validation that reports every
// problem with its file, field path and value, JSON Schema generation and atomic writes.
//
// Every file carries apiVersion "plan/v1" and a kind. Human-written inputs (clusters,
// workloads) may be YAML or JSON; machine outputs (profiles, plans, traces) are JSON.
// Durations in human files are strings such as "200ms"; profiled latencies are microseconds
// in fields whose names end in _us.
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
