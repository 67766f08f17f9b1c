package export

import (
	"math"

	"sigs.k8s.io/yaml"
)

// Ray Serve config file (`serve deploy config.yaml`, from Ray Serve's documentation): only the
// documented fields a plan sets.

// RayConfigOf is the whole file, its deployments' user_config of type U: RayUserConfig for
// pipelines and modules, a system's own record where its deployments need more (a cascade's
// gear table, QLM's engine settings, DyOrc's workflows).
type RayConfigOf[U any] struct {
	Applications []RayAppOf[U] `json:"applications"`
}

// RayAppOf is one application.
type RayAppOf[U any] struct {
	Name        string               `json:"name"`
	RoutePrefix string               `json:"route_prefix"`
	ImportPath  string               `json:"import_path"`
	Deployments []RayDeploymentOf[U] `json:"deployments"`
}

// RayDeploymentOf is one deployment: a fixed replica count, the per-replica resources, and
// the plan's batching and placement in user_config (delivered to the replica's reconfigure()).
type RayDeploymentOf[U any] struct {
	Name               string `json:"name"`
	NumReplicas        int    `json:"num_replicas,omitempty"`
	MaxOngoingRequests int    `json:"max_ongoing_requests"`
	MaxQueuedRequests  int    `json:"max_queued_requests,omitempty"`
	// AutoscalingConfig replaces NumReplicas (Ray Serve takes one or the other).
	AutoscalingConfig *RayAutoscaling `json:"autoscaling_config,omitempty"`
	RayActorOptions   RayActorOptions `json:"ray_actor_options"`
	UserConfig        U               `json:"user_config"`
}

// RayConfig, RayApp and RayDeployment carry RayUserConfig: PPipe's pools and PARD's modules.
type (
	RayConfig     = RayConfigOf[RayUserConfig]
	RayApp        = RayAppOf[RayUserConfig]
	RayDeployment = RayDeploymentOf[RayUserConfig]
)

// RayActorOptions are a replica's resources: a fraction of a GPU for a 1/v slice, and the GPU
// type as Ray's accelerator_type (Options.RayAcceleratorType): Ray labels every node with the
// type of its GPUs, so no node needs custom --resources.
type RayActorOptions struct {
	NumGPUs         float64            `json:"num_gpus"`
	NumCPUs         float64            `json:"num_cpus,omitempty"`
	Resources       map[string]float64 `json:"resources,omitempty"`
	AcceleratorType string             `json:"accelerator_type,omitempty"`
}

// RayUserConfig is what a replica needs to serve its part of the plan.
type RayUserConfig struct {
	Placement map[string]string `json:"plan"`
	// MaxBatchSize and BatchWaitTimeoutS configure @serve.batch.
	MaxBatchSize      int     `json:"max_batch_size"`
	BatchWaitTimeoutS float64 `json:"batch_wait_timeout_s"`
	// TimeoutS is the request deadline (the SLO budget).
	TimeoutS float64 `json:"timeout_s"`
	// Next names the deployments a result goes to (none = the last stage).
	Next []string `json:"next,omitempty"`
}

// NewRayDeployment builds the deployment of one pool or module.
func NewRayDeployment(name string, pl Placement, accel string, queueDelayUs, timeoutUs int64, next []string) RayDeployment {
	v := max(pl.VGPU, 1)
	return RayDeployment{
		Name: name, NumReplicas: pl.Count, MaxOngoingRequests: 2 * pl.Batch,
		RayActorOptions: RayActorOptions{NumGPUs: roundFrac(1 / float64(v)), NumCPUs: 1, AcceleratorType: accel},
		UserConfig: RayUserConfig{Placement: pl.Params(), MaxBatchSize: pl.Batch,
			BatchWaitTimeoutS: float64(queueDelayUs) / 1e6, TimeoutS: float64(timeoutUs) / 1e6, Next: next},
	}
}

// roundFrac keeps 4 decimals (1/3 → 0.3333): Ray accepts fractional resources to 1e-4.
func roundFrac(x float64) float64 { return math.Floor(x*1e4) / 1e4 }

// RayDeployments reads a serve config strictly, its deployments' user_config of type U, and
// lists the deployments of every application in file order: what a system's ReadBack walks.
func RayDeployments[U any](data []byte) ([]RayDeploymentOf[U], error) {
	var c RayConfigOf[U]
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, err
	}
	var out []RayDeploymentOf[U]
	for _, a := range c.Applications {
		out = append(out, a.Deployments...)
	}
	return out, nil
}
