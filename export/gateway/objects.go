package gateway

import "github.com/plan-dev/plan/export"

// The objects of the Kubernetes Gateway API Inference Extension and the llm-d router that an
// export writes: only the fields a plan sets, named as in the published CRDs
// (inference.networking.k8s.io/v1 InferencePool, llm-d.ai/v1alpha2 InferenceObjective) and in
// the endpoint picker's configuration types (llm-d.ai/v1alpha1 EndpointPickerConfig,
// apix/config/v1alpha1).

// API versions and kinds.
const (
	PoolAPIVersion      = "inference.networking.k8s.io/v1"
	PoolKind            = "InferencePool"
	ObjectiveAPIVersion = "llm-d.ai/v1alpha2"
	ObjectiveKind       = "InferenceObjective"
	EPPAPIVersion       = "llm-d.ai/v1alpha1"
	EPPKind             = "EndpointPickerConfig"
)

// InferencePool is the pods that serve one model and the endpoint picker that routes to them.
type InferencePool struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   export.ObjectMeta `json:"metadata"`
	Spec       PoolSpec          `json:"spec"`
}

// PoolSpec selects the pool's pods by label, their ports, and the endpoint picker.
type PoolSpec struct {
	Selector          export.LabelSelector `json:"selector"`
	TargetPorts       []PortNumber         `json:"targetPorts"`
	EndpointPickerRef EndpointPickerRef    `json:"endpointPickerRef"`
}

// PortNumber is a port.
type PortNumber struct {
	Number int `json:"number"`
}

// EndpointPickerRef names the endpoint picker's Service.
type EndpointPickerRef struct {
	Name        string     `json:"name"`
	Port        PortNumber `json:"port"`
	FailureMode string     `json:"failureMode"`
}

// InferenceObjective is a request class's priority on a pool.
type InferenceObjective struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   export.ObjectMeta `json:"metadata"`
	Spec       ObjectiveSpec     `json:"spec"`
}

// ObjectiveSpec is the pool and the priority (higher is served first).
type ObjectiveSpec struct {
	PoolRef  PoolRef `json:"poolRef"`
	Priority int     `json:"priority"`
}

// PoolRef names an InferencePool of the namespace.
type PoolRef struct {
	Name string `json:"name"`
}

// EPPConfig is the endpoint picker's configuration (EndpointPickerConfig): the plugins it
// instantiates and the scheduling profiles that run them.
type EPPConfig struct {
	APIVersion         string              `json:"apiVersion"`
	Kind               string              `json:"kind"`
	Plugins            []PluginSpec        `json:"plugins"`
	SchedulingProfiles []SchedulingProfile `json:"schedulingProfiles"`
}

// PluginSpec instantiates a plugin (named by its type unless Name is set) with its typed
// parameters.
type PluginSpec struct {
	Name       string `json:"name,omitempty"`
	Type       string `json:"type"`
	Parameters any    `json:"parameters,omitempty"`
}

// SchedulingProfile runs filters, scorers (weighted) and a picker.
type SchedulingProfile struct {
	Name    string             `json:"name"`
	Plugins []SchedulingPlugin `json:"plugins"`
}

// SchedulingPlugin refers to a plugin of the configuration; Weight weighs a scorer.
type SchedulingPlugin struct {
	PluginRef string   `json:"pluginRef"`
	Weight    *float64 `json:"weight,omitempty"`
}

// Plugin types the export configures (llm-d router's plugin registry).
const (
	SingleProfileHandler = "single-profile-handler"
	DisaggProfileHandler = "disagg-profile-handler"
	PrefixProducer       = "approx-prefix-cache-producer"
	PrefixScorer         = "prefix-cache-scorer"
	QueueScorer          = "queue-scorer"
	KVUtilScorer         = "kv-cache-utilization-scorer"
	PrefillFilter        = "prefill-filter"
	DecodeFilter         = "decode-filter"
	MaxScorePicker       = "max-score-picker"
	PDDecider            = "prefix-based-pd-decider"
)

// PrefixProducerArgs are approx-prefix-cache-producer's parameters: how many prompt tokens
// it matches, and how many KV blocks it assumes each server keeps (its LRU's capacity).
type PrefixProducerArgs struct {
	MaxPrefixTokensToMatch int   `json:"maxPrefixTokensToMatch"`
	LRUCapacityPerServer   int64 `json:"lruCapacityPerServer"`
}

// DisaggHandlerArgs are disagg-profile-handler's parameters: the decider of each stage.
type DisaggHandlerArgs struct {
	Deciders map[string]string `json:"deciders"`
}

// PDDeciderArgs are prefix-based-pd-decider's parameters: a request is prefilled remotely
// when at least NonCachedTokens of its prompt are not cached on the chosen decode pod
// (0: never), for prompts of at least PromptTokens (0: any).
type PDDeciderArgs struct {
	NonCachedTokens int `json:"nonCachedTokens"`
	PromptTokens    int `json:"promptTokens"`
}
