// Package profiler produces formats.Profile documents: analytic ones from the roofline model
// (for the zoo's architectures or any graph), imports of TensorRT exports (profiler/trt),
// LLM profiles (profiler/llm) and, through profiler/onnx and profiler/measure, measured ones.
// This file holds what the CLI and the embedded demo share: the demo profile and the grids.
package profiler

import (
	"fmt"
	"slices"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/profiler/gpus"
	"github.com/plan-dev/plan/profiler/roofline"
	"github.com/plan-dev/plan/profiler/zoo"
)

// DemoSeed is the noise seed of the embedded demo profile.
const DemoSeed = 1

// NewProfile wraps model and LLM profiles in a document.
func NewProfile(name, description string, models []formats.ModelProfile, llms []formats.LLMProfile) *formats.Profile {
	return &formats.Profile{
		TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindProfile},
		Metadata: formats.Metadata{Name: name, Description: description},
		Models:   models,
		LLMs:     llms,
	}
}

// ClusterGrid returns, per GPU type of the cluster, PPipe's (vGPU, batch) grid restricted to
// the pool's allowed slice levels and the GPU's MaxVGPU, and the GPU types in cluster order.
func ClusterGrid(c *formats.Cluster) ([]string, map[string][]roofline.Point, error) {
	var names []string
	grid := map[string][]roofline.Point{}
	for _, pool := range c.GPUs {
		spec, err := gpus.Lookup(pool.Type)
		if err != nil {
			return nil, nil, err
		}
		levels := pool.Levels()
		var pts []roofline.Point
		for _, p := range roofline.PPipeGrid(spec.MaxVGPU) {
			if slices.Contains(levels, p.VGPU) {
				pts = append(pts, p)
			}
		}
		if !slices.Contains(names, spec.Name) {
			names = append(names, spec.Name)
		}
		grid[spec.Name] = append(grid[spec.Name], pts...)
	}
	return names, grid, nil
}

// DemoProfile is the analytic profile of the zoo's demo CNN on the GPU types of cluster c,
// over PPipe's grid at the cluster's slice levels: what `plan profile` writes with no model
// and what internal/onformats/demo embeds.
func DemoProfile(c *formats.Cluster) (*formats.Profile, error) {
	g, err := zoo.Build("demo")
	if err != nil {
		return nil, err
	}
	names, grid, err := ClusterGrid(c)
	if err != nil {
		return nil, err
	}
	mp, err := roofline.Profile(g, roofline.Options{GPUs: names, Grid: grid, Seed: DemoSeed, Source: "zoo:demo"})
	if err != nil {
		return nil, fmt.Errorf("demo profile: %w", err)
	}
	return NewProfile("demo", "roofline estimate of the demo CNN on the demo cluster's GPU types", []formats.ModelProfile{*mp}, nil), nil
}
