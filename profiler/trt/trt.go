// Package trt imports TensorRT's trtexec exports: `--exportProfile` (per-layer timings) and
// `--exportLayerInfo` (the engine's layers with their input and output tensors), and turns
// them into per-layer latencies, a layer graph for cut sizes, and a blocked model profile.
//
// The profile export is a JSON array whose first element is {"count": N} (the number of
// timed iterations) followed by one object per engine layer:
// {"name", "timeMs", "averageMs", "medianMs", "percentage"} (older TensorRT versions omit
// medianMs). The layer-info export is {"Layers": [...], "Bindings": [...]}, where a layer is
// either a name (default verbosity) or, with --profilingVerbosity=detailed, an object
// {"Name", "LayerType", "Inputs": [{"Name", "Dimensions", "Format/Datatype"}], "Outputs": [...]}.
package trt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/plan-dev/plan/profiler/graph"
)

// LayerTime is one layer of a profile export.
type LayerTime struct {
	Name       string  `json:"name"`
	TimeMs     float64 `json:"timeMs"`
	AverageMs  float64 `json:"averageMs"`
	MedianMs   float64 `json:"medianMs"`
	Percentage float64 `json:"percentage"`
}

// Profile is a parsed --exportProfile file.
type Profile struct {
	// Count is the number of timed iterations.
	Count  int
	Layers []LayerTime
}

// Us is the layer's latency per inference in µs: the median when exported, else the average.
func (l LayerTime) Us() float64 {
	if l.MedianMs > 0 {
		return l.MedianMs * 1000
	}
	return l.AverageMs * 1000
}

// ParseProfile decodes a --exportProfile file.
func ParseProfile(data []byte) (*Profile, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("trtexec profile: not a JSON array: %w", err)
	}
	if len(raw) == 0 {
		return nil, errors.New(`trtexec profile: empty array (want [{"count": N}, layers...])`)
	}
	var head struct {
		Count *int `json:"count"`
	}
	if err := json.Unmarshal(raw[0], &head); err != nil || head.Count == nil {
		return nil, errors.New(`trtexec profile: [0]: must be {"count": N}`)
	}
	if *head.Count < 0 {
		return nil, fmt.Errorf("trtexec profile: [0].count: %d: must be >= 0", *head.Count)
	}
	p := &Profile{Count: *head.Count}
	seen := map[string]int{}
	for i, r := range raw[1:] {
		dec := json.NewDecoder(bytes.NewReader(r))
		dec.DisallowUnknownFields()
		var l LayerTime
		if err := dec.Decode(&l); err != nil {
			return nil, fmt.Errorf("trtexec profile: [%d]: %v", i+1, err)
		}
		if l.Name == "" {
			return nil, fmt.Errorf("trtexec profile: [%d].name: must not be empty", i+1)
		}
		for _, v := range []float64{l.TimeMs, l.AverageMs, l.MedianMs, l.Percentage} {
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("trtexec profile: [%d] %q: times must be finite and >= 0", i+1, l.Name)
			}
		}
		if j, dup := seen[l.Name]; dup {
			return nil, fmt.Errorf("trtexec profile: [%d].name: %q: duplicate of [%d]", i+1, l.Name, j)
		}
		seen[l.Name] = i + 1
		p.Layers = append(p.Layers, l)
	}
	if len(p.Layers) == 0 {
		return nil, errors.New("trtexec profile: no layers after the count")
	}
	return p, nil
}

// Tensor is a layer input or output in a layer-info export.
type Tensor struct {
	Name       string  `json:"Name"`
	Dimensions []int64 `json:"Dimensions"`
	Format     string  `json:"Format/Datatype"`
}

// LayerInfo is one engine layer.
type LayerInfo struct {
	Name      string   `json:"Name"`
	LayerType string   `json:"LayerType"`
	Inputs    []Tensor `json:"Inputs"`
	Outputs   []Tensor `json:"Outputs"`
}

// Info is a parsed --exportLayerInfo file.
type Info struct {
	Layers   []LayerInfo
	Bindings []string
	// Detailed is false when the export lists only layer names.
	Detailed bool
}

// ParseLayerInfo decodes an --exportLayerInfo file (either verbosity). Fields this importer
// does not use (TensorRT adds many per layer type) are ignored.
func ParseLayerInfo(data []byte) (*Info, error) {
	var raw struct {
		Layers   []json.RawMessage `json:"Layers"`
		Bindings []string          `json:"Bindings"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("trtexec layer info: %w", err)
	}
	if len(raw.Layers) == 0 {
		return nil, errors.New("trtexec layer info: Layers: must list at least one layer")
	}
	info := &Info{Bindings: raw.Bindings}
	seen := map[string]bool{}
	for i, r := range raw.Layers {
		var l LayerInfo
		var name string
		if err := json.Unmarshal(r, &name); err == nil {
			l.Name = name
		} else {
			if err := json.Unmarshal(r, &l); err != nil {
				return nil, fmt.Errorf("trtexec layer info: Layers[%d]: %v", i, err)
			}
			info.Detailed = true
		}
		if l.Name == "" {
			return nil, fmt.Errorf("trtexec layer info: Layers[%d].Name: must not be empty", i)
		}
		if seen[l.Name] {
			return nil, fmt.Errorf("trtexec layer info: Layers[%d].Name: %q: duplicate", i, l.Name)
		}
		seen[l.Name] = true
		for _, ts := range [][]Tensor{l.Inputs, l.Outputs} {
			for j, t := range ts {
				if t.Name == "" {
					return nil, fmt.Errorf("trtexec layer info: Layers[%d] %q: tensor %d: empty name", i, l.Name, j)
				}
				for _, d := range t.Dimensions {
					if d < 0 {
						return nil, fmt.Errorf("trtexec layer info: Layers[%d] %q: tensor %q: dimensions %v: must be >= 0 (export with a fixed shape)", i, l.Name, t.Name, t.Dimensions)
					}
				}
			}
		}
		info.Layers = append(info.Layers, l)
	}
	return info, nil
}

// DType maps a TensorRT "Format/Datatype" description to a graph dtype name.
func DType(format string) string {
	f := strings.ToLower(format)
	switch {
	case strings.Contains(f, "fp16") || strings.Contains(f, "half"):
		return "float16"
	case strings.Contains(f, "int8"):
		return "int8"
	case strings.Contains(f, "int32"):
		return "int32"
	case strings.Contains(f, "int64"):
		return "int64"
	case strings.Contains(f, "bool"):
		return "bool"
	case strings.Contains(f, "uint8"):
		return "uint8"
	}
	return "float32"
}

// Layer is an imported layer: its time and, when the layer info was detailed, its tensors.
type Layer struct {
	Name string
	Type string
	Us   float64
	Info *LayerInfo
}

// Merge pairs the profile with the layer info (optional): layers come in the layer info's
// (engine) order, and layers the profile does not time (fused away) get 0 µs. Every timed
// layer must appear in the layer info.
func Merge(p *Profile, info *Info) ([]Layer, error) {
	if info == nil {
		out := make([]Layer, len(p.Layers))
		for i, l := range p.Layers {
			out[i] = Layer{Name: l.Name, Us: l.Us()}
		}
		return out, nil
	}
	times := map[string]float64{}
	for _, l := range p.Layers {
		times[l.Name] = l.Us()
	}
	out := make([]Layer, len(info.Layers))
	for i := range info.Layers {
		li := &info.Layers[i]
		out[i] = Layer{Name: li.Name, Type: li.LayerType, Us: times[li.Name], Info: li}
		delete(times, li.Name)
	}
	for _, l := range p.Layers {
		if _, left := times[l.Name]; left {
			return nil, fmt.Errorf("trtexec profile: layer %q: not in the layer info export (exports of different engines?)", l.Name)
		}
	}
	return out, nil
}

// Graph builds a layer graph from detailed layer info, for cut sizes: tensors keep TensorRT's
// element type, and their leading dimension is taken as the batch (export the engine at the
// batch you pass as batch; it is divided out). Engine inputs are the tensors no layer
// produces; outputs those no layer reads.
func Graph(name string, layers []Layer, batch int64) (*graph.Graph, error) {
	g := &graph.Graph{Name: name, Tensors: map[string]graph.Tensor{}}
	produced := map[string]bool{}
	read := map[string]bool{}
	for _, l := range layers {
		if l.Info == nil {
			return nil, errors.New("trtexec layer info: not detailed (re-export with --profilingVerbosity=detailed) or missing")
		}
		for _, t := range l.Info.Outputs {
			produced[t.Name] = true
		}
	}
	addTensor := func(t Tensor) error {
		dims := t.Dimensions
		if len(dims) > 0 {
			if dims[0] != batch {
				return fmt.Errorf("tensor %q: dimensions %v: leading dimension must be the batch %d", t.Name, dims, batch)
			}
			dims = dims[1:]
		}
		shape := make([]int64, len(dims))
		for i, d := range dims {
			shape[i] = max(d, 1)
		}
		g.Tensors[t.Name] = graph.Tensor{Name: t.Name, Shape: shape, DType: DType(t.Format)}
		return nil
	}
	for _, l := range layers {
		n := graph.Node{Name: l.Name, Op: l.Type}
		if n.Op == "" {
			n.Op = "TensorRT"
		}
		for _, t := range l.Info.Inputs {
			if err := addTensor(t); err != nil {
				return nil, err
			}
			n.Inputs = append(n.Inputs, t.Name)
			if !produced[t.Name] && !read[t.Name] {
				g.Inputs = append(g.Inputs, t.Name)
			}
			read[t.Name] = true
		}
		for _, t := range l.Info.Outputs {
			if err := addTensor(t); err != nil {
				return nil, err
			}
			n.Outputs = append(n.Outputs, t.Name)
		}
		g.Nodes = append(g.Nodes, n)
	}
	for _, l := range layers {
		for _, t := range l.Info.Outputs {
			if !read[t.Name] {
				g.Outputs = append(g.Outputs, t.Name)
			}
		}
	}
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("trtexec layer info: %w", err)
	}
	return g, nil
}
