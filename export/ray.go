package export

import (
	"fmt"
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

// EachRayDeployment reads a serve config strictly, its deployments' user_config of type U,
// and hands f the deployments of every application in file order: what a system's ReadBack
// walks. An error from f stops the walk, naming the deployment.
func EachRayDeployment[U any](data []byte, f func(RayDeploymentOf[U]) error) error {
	var c RayConfigOf[U]
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return err
	}
	for _, a := range c.Applications {
		for _, d := range a.Deployments {
			if err := f(d); err != nil {
				return fmt.Errorf("deployment %s: %w", d.Name, err)
			}
		}
	}
	return nil
}

// RaySystemFile renders the serve-config.yaml of a system whose deployments carry its own
// user_config: one application named o.Name (route /<name>, o.ImportPath) holding deps, after
// the comment head.
func RaySystemFile[U any](o Options, deps []RayDeploymentOf[U], head []byte) (Files, error) {
	a := RayAppOf[U]{Name: o.Name, RoutePrefix: "/" + o.Name, ImportPath: o.ImportPath, Deployments: deps}
	b, err := YAML(RayConfigOf[U]{Applications: []RayAppOf[U]{a}})
	if err != nil {
		return nil, err
	}
	return Files{RayConfigFile: append(head, b...)}, nil
}
