package formats

// Cluster describes the GPUs available to a plan.
type Cluster struct {
	TypeMeta
	Metadata Metadata  `json:"metadata"`
	GPUs     []GPUPool `json:"gpus"`
	// NICGbps is the nominal per-server NIC bandwidth; NICDerate divides it to get the
	// effective bandwidth the planner uses (PPipe derates by 5).
	NICGbps   float64 `json:"nic_gbps"`
	NICDerate float64 `json:"nic_derate,omitempty"`
	// HostMemoryBytes is CPU memory per server (model cache, KV swap), 0 = unknown.
	HostMemoryBytes int64 `json:"host_memory_bytes,omitempty"`
	// Servers optionally lists servers explicitly; when empty they are derived from
	// gpus[].per_server.
	Servers []Server `json:"servers,omitempty"`
	// Currency names the unit of every gpus[].price_per_hour (any code, e.g. USD,
	// EUR). One per file; empty = USD, the unit of the default price table
	// (DefaultPrice), which only applies when the currency is USD.
	Currency string `json:"currency,omitempty"`
	// PriceBasis says what every gpus[].price_per_hour (and spot_price_per_hour) prices:
	// PriceBasisGPU (empty: one GPU for an hour) or PriceBasisVM (one server of per_server
	// GPUs for an hour, as clouds sell GPUs in whole VMs; ecosystem-dropin.md §6). One basis
	// per file: a gpus[] entry may restate it but not differ.
	PriceBasis string `json:"price_basis,omitempty"`
	// KVLinkGBps is the bandwidth in GB/s of the link a disaggregated deployment moves a
	// request's KV cache over from its prefill instance to its decode instance (one per
	// decode instance, inbound; llm-deploy-search §1 "Links": H100/H200 450 GB/s NVLink in a
	// node, 50 GB/s across nodes). nil = none given: a plan with prefill instances needs it.
	KVLinkGBps *float64 `json:"kv_link_gbps,omitempty"`
	// SpotShare is `plan solve --objective cost --spot SHARE`, set by the command and never
	// read from or written to a file: the most of each GPU type's GPUs a cost plan may run on
	// spot capacity (ecosystem-dropin.md §6: spot is up to 90% off, preemptible). nil = every
	// GPU on-demand. Prices then gives the planners the blended price (PlanningPrice) and
	// planner/fleet records the split (SpotSplit).
	SpotShare *float64 `json:"-"`
}

// GPUPool is a number of GPUs of one type.
type GPUPool struct {
	Type  string `json:"type"`
	Count int    `json:"count"`
	// PerServer is how many of these GPUs share a server (and its NIC).
	PerServer int `json:"per_server"`
	// MemoryBytes per GPU; 0 = the known value for this type.
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// VGPU lists the allowed slice levels v (slice = 1/v GPU); empty = [1].
	VGPU []int `json:"vgpu,omitempty"`
	// Class is "high" or "low" (PPipe's GPU classes, for reporting utilization).
	Class string `json:"class,omitempty"`
	// PricePerHour is what one GPU of this type costs per hour in the cluster's currency
	// (`plan solve --objective cost` minimises Σ price·GPUs); nil = the public on-demand list
	// price of DefaultPrice (plan says on stderr that it used it).
	PricePerHour *float64 `json:"price_per_hour,omitempty"`
	// SpotPricePerHour is the spot (preemptible) price on the same basis; nil = none.
	SpotPricePerHour *float64 `json:"spot_price_per_hour,omitempty"`
	// PriceBasis restates the file's price_basis for this type (it must not differ).
	PriceBasis string `json:"price_basis,omitempty"`
	// Available is the most GPUs of this type a cost-optimal fleet may use (what can be
	// bought or rented); nil = unbounded. Count stays the GPUs a throughput plan uses.
	Available *int `json:"available,omitempty"`
	// NodeLabels select this GPU type's nodes in exported Kubernetes manifests, replacing
	// the built-in nvidia.com/gpu.product label (export/gpulabels.go): for variants
	// (NVIDIA-A100-PCIE-40GB), cloud labels or types plan has no label for.
	NodeLabels map[string]string `json:"node_labels,omitempty"`
}

// Server is one machine of a cluster with explicit NIC bandwidth.
type Server struct {
	Name    string  `json:"name"`
	GPU     string  `json:"gpu"`
	GPUs    int     `json:"gpus"`
	NICGbps float64 `json:"nic_gbps,omitempty"`
}

// Pool returns the GPU pool of the given type.
func (c *Cluster) Pool(gpu string) (*GPUPool, bool) {
	for i := range c.GPUs {
		if c.GPUs[i].Type == gpu {
			return &c.GPUs[i], true
		}
	}
	return nil, false
}

// EffectiveNICMbps is the bandwidth (Mbit/s = bit/µs) the planner may use per server.
func (c *Cluster) EffectiveNICMbps() float64 {
	d := c.NICDerate
	if d <= 0 {
		d = 1
	}
	return c.NICGbps * 1000 / d
}

// Levels returns the allowed vGPU levels of the pool, defaulting to whole GPUs.
func (g *GPUPool) Levels() []int {
	if len(g.VGPU) == 0 {
		return []int{1}
	}
	return g.VGPU
}
