package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/plan-dev/plan/formats"
)

// The deploy/ part of an export: what runs the exported workers on Kubernetes beside the
// target's own files. Every export gets the `plan serve` coordinator in front of its workers
// (a ConfigMap with the plan and the endpoints file, a Deployment with both mounted, a
// Service) — the router cascades, QLM's queues and DyOrc's workflows need; the image is built
// from deploy/Dockerfile at the repository root. Workers get the autoscaling their target
// uses (autoscale.go): KServe predictors KServe's KEDA annotations and autoScaling, Ray
// deployments autoscaling_config, Triton models a Deployment each with a KEDA ScaledObject and
// an HPA v2 variant (apply one of the two).

// DeployDir holds the Kubernetes objects an export adds.
const DeployDir = "deploy"

// IsDeploy reports whether an export's file is one of deploy/'s.
func IsDeploy(name string) bool { return strings.HasPrefix(name, DeployDir+"/") }

// DefaultImage is the coordinator's image (Options.Image): deploy/Dockerfile's, tagged.
const DefaultImage = "plan:latest"

// DefaultTritonImage runs an exported Triton repository (NGC's tritonserver image).
const DefaultTritonImage = "nvcr.io/nvidia/tritonserver:25.01-py3"

// workers gives a rendered export's workers their autoscaling (the target's own: KServe's
// KEDA integration, Ray's autoscaling_config, Triton Deployments with KEDA and HPA) and
// returns the endpoints the coordinator reaches them at.
type workers func(f Files, c Capacity, o Options) ([]StageEndpoint, error)

// withDeploy adds the workers' autoscaling and the coordinator to a rendered export.
func withDeploy(scale workers, f Files, p *formats.Plan, o Options) (Files, error) {
	eps, err := scale(f, CapacityOf(p), o)
	if err != nil {
		return nil, err
	}
	return f, coordinator(f, p, o, eps)
}

// rayWorkers: Ray Serve scales its deployments itself; the coordinator calls the Serve
// application's service.
func rayWorkers(f Files, c Capacity, o Options) ([]StageEndpoint, error) {
	if err := rayAutoscale(f, c); err != nil {
		return nil, err
	}
	return []StageEndpoint{{Stage: "*", URLs: []string{"http://" + o.Name + "-serve-svc:8000"}}}, nil
}

// StageEndpoint is one entry of `plan serve --endpoints` (serve.Endpoints): a stage name or
// pattern, the model name at the endpoint, its URLs.
type StageEndpoint struct {
	Stage string   `json:"stage"`
	Model string   `json:"model,omitempty"`
	URLs  []string `json:"urls"`
}

// splitHead separates a file's leading '#' comment lines from the document.
func splitHead(b []byte) (head, body []byte) {
	for len(b) > 0 && b[0] == '#' {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			i = len(b) - 1
		}
		head, b = append(head, b[:i+1]...), b[i+1:]
	}
	return head, b
}

// argValue is the value of --name=value among args ("" when absent).
func argValue(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// kserveScale gives every InferenceService its autoscaling and returns the coordinator's
// endpoints (the predictor's in-cluster service, KServe v2 at /v2/models/<name>).
func kserveScale(f Files, c Capacity, o Options) ([]StageEndpoint, error) {
	var eps []StageEndpoint
	for _, name := range f.Names() {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		head, body := splitHead(f[name])
		if kind, err := KindOf(body); err != nil || kind != "InferenceService" {
			continue
		}
		var s InferenceService
		if err := yaml.UnmarshalStrict(body, &s); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		pr := s.Spec.Predictor
		count := pr.MaxReplicas
		var sc Scale
		key := s.Metadata.Annotations[labelPrefix+"key"]
		if pr.Model.ModelFormat.Name == "huggingface" {
			seqs, _ := strconv.Atoi(argValue(pr.Model.Args, "max-num-seqs"))
			model := argValue(pr.Model.Args, "model_name")
			if model == "" {
				model = s.Metadata.Name
			}
			sc = llmScale(model, seqs, count)
		} else {
			fallback := 0.0
			if pr.ScaleMetric == "rps" {
				fallback = float64(pr.ScaleTarget)
			}
			var ok bool
			if sc, ok = c.unitScale([]string{key}, count, fallback); !ok {
				wait := int64(1000)
				if pr.Batcher != nil {
					wait = int64(pr.Batcher.MaxLatency) * 1000
				}
				sc = queueScale(s.Metadata.Name, count, wait)
			}
			sc.Min = max(min(sc.Min, pr.MinReplicas), 1)
		}
		applyKServeScale(&s, sc, o.Prometheus)
		b, err := YAML(s)
		if err != nil {
			return nil, err
		}
		f[name] = append(head, b...)
		if key != "" {
			eps = append(eps, StageEndpoint{Stage: key, Model: s.Metadata.Name, URLs: []string{"http://" + s.Metadata.Name + "-predictor"}})
		}
	}
	return eps, nil
}

// rayAutoscale gives every GPU deployment of serve-config.yaml its autoscaling_config (CPU
// deployments — routers, drivers, coordinators — keep their replicas).
func rayAutoscale(f Files, c Capacity) error {
	data, ok := f[RayConfigFile]
	if !ok {
		return nil
	}
	head, body := splitHead(data)
	var cfg RayConfigOf[map[string]any]
	if err := yaml.UnmarshalStrict(body, &cfg); err != nil {
		return fmt.Errorf("%s: %w", RayConfigFile, err)
	}
	for ai := range cfg.Applications {
		for di := range cfg.Applications[ai].Deployments {
			d := &cfg.Applications[ai].Deployments[di]
			if d.RayActorOptions.NumGPUs == 0 || d.AutoscalingConfig != nil {
				continue
			}
			count := d.NumReplicas
			if eng, ok := d.UserConfig["engine"].(map[string]any); ok {
				seqs, _ := eng["max_num_seqs"].(float64)
				rayScale(d, llmScale("", int(seqs), count), 0)
				continue
			}
			pl, _ := d.UserConfig["plan"].(map[string]any)
			key, _ := pl[ParamKey].(string)
			app := appOf(key)
			if sc, ok := c.unitScale([]string{key}, count, 0); ok {
				rayScale(d, sc, c.P50Ms[app])
				continue
			}
			batch, _ := d.UserConfig["max_batch_size"].(float64)
			rayScale(d, Scale{Min: count, Max: count, Threshold: math1(batch)}, 0)
		}
	}
	b, err := YAML(cfg)
	if err != nil {
		return err
	}
	f[RayConfigFile] = append(head, b...)
	return nil
}

func math1(x float64) float64 { return max(x, 1) }

// tritonDeploy writes, for every GPU model of the repository (ensembles and Python-backend
// coordinators run inside the coordinator's Triton or plan serve), a Deployment of Triton
// servers that load only that model (--model-control-mode=explicit), each pod with the GPUs
// its instance groups list (ids 0.. within the pod), a Service, and its ScaledObject and HPA.
func tritonDeploy(f Files, c Capacity, o Options) ([]StageEndpoint, error) {
	type model struct {
		name, dir, key string
		gpus, servers  int
		waitUs         int64
		llm            bool
		seqs           int
		models         []string
	}
	byName := map[string]*model{}
	keys := map[string]string{}
	var order []string
	for _, name := range f.Names() {
		if path.Base(name) != "config.pbtxt" {
			continue
		}
		cfg, err := ParseTriton(f[name])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		gpus := map[int32]bool{}
		for _, g := range cfg.InstanceGroup {
			for _, id := range g.Gpus {
				gpus[id] = true
			}
		}
		var seqs, tp int
		if cfg.Backend == "vllm" {
			// A vLLM-backend model's engine arguments (its GPUs under KIND_MODEL: the
			// tensor-parallel size) are in 1/model.json.
			var eng struct {
				MaxNumSeqs int `json:"max_num_seqs"`
				TP         int `json:"tensor_parallel_size"`
			}
			if b, ok := f[path.Join(path.Dir(name), "1", VLLMModelFile)]; ok && json.Unmarshal(b, &eng) == nil {
				seqs, tp = eng.MaxNumSeqs, eng.TP
			}
		}
		if (len(gpus) == 0 && tp == 0) || cfg.Platform == "ensemble" || cfg.Backend == "python" {
			continue
		}
		params := TritonParams(cfg)
		keys[cfg.Name] = params[ParamKey]
		pod := cfg.Name
		if v := params[ParamPod]; v != "" {
			pod = v
		}
		m := byName[pod]
		if m == nil {
			m = &model{name: pod, dir: path.Dir(path.Dir(name)), key: params[ParamKey], servers: 1}
			if v, err := strconv.Atoi(params[ParamServers]); err == nil && v > 0 {
				m.servers = v
			}
			if q := cfg.GetDynamicBatching(); q != nil {
				m.waitUs = int64(q.MaxQueueDelayMicroseconds)
			}
			m.llm, m.seqs = cfg.Backend == "vllm", seqs
			byName[pod] = m
			order = append(order, pod)
		}
		m.models = append(m.models, cfg.Name)
		for id := range gpus {
			m.gpus = max(m.gpus, int(id)+1) // ids within the server: 0..k-1
		}
		m.gpus = max(m.gpus, tp)
	}
	var eps []StageEndpoint
	for _, n := range order {
		m := byName[n]
		unit := DNSLabel(n)
		repo := "/models"
		if m.dir != "." {
			repo += "/" + m.dir
		}
		labels := map[string]string{"app.kubernetes.io/name": unit, "app.kubernetes.io/part-of": o.Name}
		res := &Resources{Limits: map[string]string{"nvidia.com/gpu": strconv.Itoa(m.gpus)}, Requests: map[string]string{"nvidia.com/gpu": strconv.Itoa(m.gpus)}}
		d := Deployment{APIVersion: "apps/v1", Kind: "Deployment", Metadata: ObjectMeta{Name: unit, Labels: labels},
			Spec: DeploymentSpec{Replicas: m.servers, Selector: LabelSelector{MatchLabels: labels},
				Template: PodTemplate{Metadata: ObjectMeta{Labels: labels}, Spec: PodSpec{
					Containers: []Container{{Name: "tritonserver", Image: DefaultTritonImage,
						Args:      append([]string{"tritonserver", "--model-repository=" + repo, "--model-control-mode=explicit"}, loadArgs(m.models)...),
						Ports:     []Port{{Name: "http", ContainerPort: 8000}, {Name: "grpc", ContainerPort: 8001}, {Name: "metrics", ContainerPort: 8002}},
						Resources: res, VolumeMounts: []VolumeMount{{Name: "models", MountPath: "/models", ReadOnly: true}},
						ReadinessProbe: &Probe{HTTPGet: HTTPGet{Path: "/v2/health/ready", Port: "http"}, PeriodSeconds: 5}}},
					Volumes: []Volume{{Name: "models", PersistentVolumeClaim: &PVCVolume{ClaimName: o.ModelsClaim, ReadOnly: true}}}}}}}
		svc := Service{APIVersion: "v1", Kind: "Service", Metadata: ObjectMeta{Name: unit, Labels: labels},
			Spec: ServiceSpec{Selector: labels, Ports: []ServicePort{{Name: "http", Port: 8000, TargetPort: "http"}, {Name: "metrics", Port: 8002, TargetPort: "metrics"}}}}
		// The server's pools: one, or under PPipe's stage rounding those sharing its GPUs.
		podKeys := []string{m.key}
		for _, mn := range m.models[1:] {
			podKeys = append(podKeys, keys[mn])
		}
		sc, ok := c.unitScale(podKeys, m.servers, 0)
		switch {
		case m.llm:
			sc = llmScale(n, m.seqs, m.servers)
		case !ok:
			sc = queueScale(n, m.servers, m.waitUs)
		}
		if err := putYAML(f, DeployDir+"/triton-"+unit+".yaml", d, svc); err != nil {
			return nil, err
		}
		if err := putYAML(f, DeployDir+"/autoscale/scaledobject-"+unit+".yaml", ScaledObjectFor(unit, sc, o.Prometheus)); err != nil {
			return nil, err
		}
		if err := putYAML(f, DeployDir+"/autoscale-hpa/hpa-"+unit+".yaml", HPAFor(unit, sc)); err != nil {
			return nil, err
		}
		for _, mn := range m.models {
			if k := keys[mn]; k != "" {
				eps = append(eps, StageEndpoint{Stage: k, Model: mn, URLs: []string{"http://" + unit + ":8000"}})
			}
		}
	}
	return eps, nil
}

func loadArgs(models []string) []string {
	out := make([]string, len(models))
	for i, m := range models {
		out[i] = "--load-model=" + m
	}
	return out
}

// putYAML writes objects as one multi-document YAML file.
func putYAML(f Files, name string, objs ...any) error {
	var b []byte
	for i, obj := range objs {
		y, err := YAML(obj)
		if err != nil {
			return err
		}
		if i > 0 {
			b = append(b, "---\n"...)
		}
		b = append(b, y...)
	}
	return put(f, name, b)
}

// coordinator writes deploy/coordinator.yaml: the plan and the endpoints in a ConfigMap, and
// `plan serve --workers remote` in front of the workers with both mounted.
func coordinator(f Files, p *formats.Plan, o Options, eps []StageEndpoint) error {
	planJSON, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	slices.SortStableFunc(eps, func(a, b StageEndpoint) int { return strings.Compare(a.Stage, b.Stage) })
	if len(eps) == 0 {
		eps = []StageEndpoint{{Stage: "*", URLs: []string{"http://" + o.Name + "-workers:8000"}}}
	}
	epDoc, err := YAML(struct {
		APIVersion string          `json:"apiVersion"`
		Kind       string          `json:"kind"`
		Stages     []StageEndpoint `json:"stages"`
	}{formats.APIVersion, "Endpoints", eps})
	if err != nil {
		return err
	}
	name := o.Name + "-serve"
	labels := map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": o.Name}
	cm := ConfigMap{APIVersion: "v1", Kind: "ConfigMap", Metadata: ObjectMeta{Name: name, Labels: labels},
		Data: map[string]string{"plan.json": string(planJSON) + "\n", "endpoints.yaml": string(epDoc)}}
	d := Deployment{APIVersion: "apps/v1", Kind: "Deployment", Metadata: ObjectMeta{Name: name, Labels: labels},
		Spec: DeploymentSpec{Replicas: 1, Selector: LabelSelector{MatchLabels: labels},
			Template: PodTemplate{Metadata: ObjectMeta{Labels: labels}, Spec: PodSpec{
				Containers: []Container{{Name: "plan-serve", Image: o.Image,
					// plan serve binds a non-loopback address only when told to; the admin
					// endpoints stay on loopback (serve's own default).
					Args:  []string{"serve", "/etc/plan/plan.json", "--addr=0.0.0.0:8080", "--workers=remote", "--endpoints=/etc/plan/endpoints.yaml"},
					Ports: []Port{{Name: "http", ContainerPort: 8080}},
					Resources: &Resources{Requests: map[string]string{"cpu": "1", "memory": "512Mi"},
						Limits: map[string]string{"memory": "2Gi"}},
					VolumeMounts:   []VolumeMount{{Name: "plan", MountPath: "/etc/plan", ReadOnly: true}},
					ReadinessProbe: &Probe{HTTPGet: HTTPGet{Path: "/v2/health/ready", Port: "http"}, PeriodSeconds: 5},
					LivenessProbe:  &Probe{HTTPGet: HTTPGet{Path: "/v2/health/live", Port: "http"}, PeriodSeconds: 10},
					SecurityCtx:    &SecurityCtx{RunAsNonRoot: true, ReadOnlyRootFilesystem: true}}},
				Volumes: []Volume{{Name: "plan", ConfigMap: &ConfigMapVolume{Name: name}}}}}}}
	svc := Service{APIVersion: "v1", Kind: "Service", Metadata: ObjectMeta{Name: name, Labels: labels},
		Spec: ServiceSpec{Selector: labels, Ports: []ServicePort{{Name: "http", Port: 8080, TargetPort: "http"}}}}
	return putYAML(f, DeployDir+"/coordinator.yaml", cm, d, svc)
}
