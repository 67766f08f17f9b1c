package export

// Kubernetes objects an export writes beside the target's own (deploy/): the `plan serve`
// coordinator (ConfigMap, Deployment, Service) and the autoscalers of the workers (KEDA
// ScaledObject, HPA v2). Only the documented fields plan sets (ecosystem-dropin.md §5; the
// Kubernetes API reference for apps/v1, v1 and autoscaling/v2).

// ConfigMap is v1 ConfigMap.
type ConfigMap struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   ObjectMeta        `json:"metadata"`
	Data       map[string]string `json:"data"`
}

// Deployment is apps/v1 Deployment.
type Deployment struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   ObjectMeta     `json:"metadata"`
	Spec       DeploymentSpec `json:"spec"`
}

// DeploymentSpec holds the replicas, the selector and the pod template.
type DeploymentSpec struct {
	Replicas int           `json:"replicas"`
	Selector LabelSelector `json:"selector"`
	Template PodTemplate   `json:"template"`
}

// LabelSelector selects by labels.
type LabelSelector struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

// PodTemplate is a pod template.
type PodTemplate struct {
	Metadata ObjectMeta `json:"metadata"`
	Spec     PodSpec    `json:"spec"`
}

// PodSpec is the part of a pod spec plan sets.
type PodSpec struct {
	Containers   []Container       `json:"containers"`
	Volumes      []Volume          `json:"volumes,omitempty"`
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
}

// Container is one container.
type Container struct {
	Name           string        `json:"name"`
	Image          string        `json:"image"`
	Args           []string      `json:"args,omitempty"`
	Ports          []Port        `json:"ports,omitempty"`
	Resources      *Resources    `json:"resources,omitempty"`
	VolumeMounts   []VolumeMount `json:"volumeMounts,omitempty"`
	ReadinessProbe *Probe        `json:"readinessProbe,omitempty"`
	LivenessProbe  *Probe        `json:"livenessProbe,omitempty"`
	Env            []EnvVar      `json:"env,omitempty"`
	SecurityCtx    *SecurityCtx  `json:"securityContext,omitempty"`
}

// EnvVar is a container environment variable.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// SecurityCtx is the container security context plan sets.
type SecurityCtx struct {
	RunAsNonRoot             bool `json:"runAsNonRoot"`
	ReadOnlyRootFilesystem   bool `json:"readOnlyRootFilesystem"`
	AllowPrivilegeEscalation bool `json:"allowPrivilegeEscalation"`
}

// Port is a container port.
type Port struct {
	Name          string `json:"name"`
	ContainerPort int    `json:"containerPort"`
}

// VolumeMount mounts a volume.
type VolumeMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
	SubPath   string `json:"subPath,omitempty"`
}

// Volume is a ConfigMap or PVC volume.
type Volume struct {
	Name                  string           `json:"name"`
	ConfigMap             *ConfigMapVolume `json:"configMap,omitempty"`
	PersistentVolumeClaim *PVCVolume       `json:"persistentVolumeClaim,omitempty"`
}

// ConfigMapVolume mounts a ConfigMap.
type ConfigMapVolume struct {
	Name string `json:"name"`
}

// PVCVolume mounts a PersistentVolumeClaim.
type PVCVolume struct {
	ClaimName string `json:"claimName"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
}

// Probe is an HTTP GET probe.
type Probe struct {
	HTTPGet       HTTPGet `json:"httpGet"`
	PeriodSeconds int     `json:"periodSeconds,omitempty"`
}

// HTTPGet is a probe's request.
type HTTPGet struct {
	Path string `json:"path"`
	Port string `json:"port"`
}

// Service is v1 Service.
type Service struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Metadata   ObjectMeta  `json:"metadata"`
	Spec       ServiceSpec `json:"spec"`
}

// ServiceSpec selects the pods and names the ports.
type ServiceSpec struct {
	Selector map[string]string `json:"selector"`
	Ports    []ServicePort     `json:"ports"`
}

// ServicePort is one service port (targetPort by the container port's name).
type ServicePort struct {
	Name       string `json:"name"`
	Port       int    `json:"port"`
	TargetPort string `json:"targetPort"`
}

// ScaledObject is keda.sh/v1alpha1 ScaledObject (ecosystem-dropin.md §5).
type ScaledObject struct {
	APIVersion string           `json:"apiVersion"`
	Kind       string           `json:"kind"`
	Metadata   ObjectMeta       `json:"metadata"`
	Spec       ScaledObjectSpec `json:"spec"`
}

// ScaledObjectSpec: the target, the replica range and the triggers. KEDA computes a
// Prometheus trigger's replicas as ceil(value / threshold) (threshold per pod, AverageValue).
type ScaledObjectSpec struct {
	ScaleTargetRef  ScaleTargetRef `json:"scaleTargetRef"`
	PollingInterval int            `json:"pollingInterval"`
	CooldownPeriod  int            `json:"cooldownPeriod"`
	MinReplicaCount int            `json:"minReplicaCount"`
	MaxReplicaCount int            `json:"maxReplicaCount"`
	Triggers        []Trigger      `json:"triggers"`
}

// ScaleTargetRef names the scaled workload.
type ScaleTargetRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
}

// Trigger is one KEDA trigger; a Prometheus trigger's metadata holds serverAddress, query,
// threshold (a string: KEDA parses it as a float) and ignoreNullValues.
type Trigger struct {
	Type string `json:"type"`
	// MetricType is Value for a metric that is already a mean (default AverageValue).
	MetricType string            `json:"metricType,omitempty"`
	Metadata   map[string]string `json:"metadata"`
}

// HPA is autoscaling/v2 HorizontalPodAutoscaler with External metrics (served by a metrics
// adapter, e.g. prometheus-adapter or KEDA's own).
type HPA struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   ObjectMeta `json:"metadata"`
	Spec       HPASpec    `json:"spec"`
}

// HPASpec: the target, the range, the metrics.
type HPASpec struct {
	ScaleTargetRef ScaleTargetRef `json:"scaleTargetRef"`
	MinReplicas    int            `json:"minReplicas"`
	MaxReplicas    int            `json:"maxReplicas"`
	Metrics        []HPAMetric    `json:"metrics"`
}

// HPAMetric is one metric source (type External).
type HPAMetric struct {
	Type     string             `json:"type"`
	External *HPAExternalMetric `json:"external,omitempty"`
}

// HPAExternalMetric names an external metric and its target.
type HPAExternalMetric struct {
	Metric MetricIdentifier `json:"metric"`
	Target MetricTarget     `json:"target"`
}

// MetricIdentifier names a metric and selects its series.
type MetricIdentifier struct {
	Name     string         `json:"name"`
	Selector *LabelSelector `json:"selector,omitempty"`
}

// MetricTarget is a target value: AverageValue is per pod (replicas = ceil(total / it)).
type MetricTarget struct {
	Type         string `json:"type"`
	AverageValue string `json:"averageValue,omitempty"`
	Value        string `json:"value,omitempty"`
}
