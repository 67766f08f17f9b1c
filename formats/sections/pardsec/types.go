package pardsec

import "github.com/plan-dev/plan/formats"

// PARDPlan provisions multi-module pipelines and names the dropping policy to run.
type PARDPlan struct {
	Policy string             `json:"policy"`
	Params map[string]float64 `json:"params,omitempty"`
	Apps   []PARDApp          `json:"apps"`
}

// PARDApp is one provisioned pipeline.
type PARDApp struct {
	Name    string           `json:"name"`
	SLO     formats.Duration `json:"slo"`
	RateRPS float64          `json:"rate_rps"`
	Modules []ModulePlan     `json:"modules"`
}

// ModulePlan provisions one module: batch size and workers on a GPU type.
type ModulePlan struct {
	Name      string  `json:"name"`
	Model     string  `json:"model"`
	GPU       string  `json:"gpu"`
	Batch     int     `json:"batch"`
	Workers   int     `json:"workers"`
	LatencyUs float64 `json:"latency_us"`
}

// Pipeline is a multi-module application (a DAG, usually a chain) with one end-to-end SLO.
type Pipeline struct {
	Name    string           `json:"name"`
	SLO     formats.Duration `json:"slo"`
	RateRPS float64          `json:"rate_rps,omitempty"`
	Modules []Module         `json:"modules"`
}

// Module is one stage of a pipeline.
type Module struct {
	Name string `json:"name"`
	// Model names the model profile that serves this module.
	Model string `json:"model"`
	// After lists upstream modules; empty = an entry module.
	After []Edge `json:"after,omitempty"`
}

// Edge is a dependency on an upstream module; Probability < 1 makes it conditional
// (the request visits this module only with that probability).
type Edge struct {
	Module      string  `json:"module"`
	Probability float64 `json:"probability,omitempty"`
}
