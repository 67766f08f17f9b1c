// Package zoo builds the graphs of well-known DNNs from their published configurations, so
// the roofline backend can profile models nobody has exported, and the demo has a model. Every
// graph carries per-sample shapes (batch excluded), dtype float32, ONNX op names and complete
// attributes (kernel_shape, strides, pads, dilations, group, transB, perm, axis...), enough
// for profiler/onnx to materialize it with random weights.
package zoo

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/plan-dev/plan/profiler/graph"
)

var builders = map[string]func() (*graph.Graph, error){
	"demo":             demoCNN,
	"resnet50":         func() (*graph.Graph, error) { return resnet("resnet50", []int{3, 4, 6, 3}, 1) },
	"resnet101":        func() (*graph.Graph, error) { return resnet("resnet101", []int{3, 4, 23, 3}, 1) },
	"wide-resnet101-2": func() (*graph.Graph, error) { return resnet("wide-resnet101-2", []int{3, 4, 23, 3}, 2) },
	"efficientnet-b0":  func() (*graph.Graph, error) { return efficientNet("efficientnet-b0", 1.0, 1.0, 224) },
	"efficientnet-b8":  func() (*graph.Graph, error) { return efficientNet("efficientnet-b8", 2.2, 3.6, 672) },
	"convnext-l":       convnextL,
	"inception-v3":     inceptionV3,
	"repvgg-b3":        repvggB3,
	"fcn-r101-d8":      fcnR101D8,
	"nonlocal-r101-d8": r101d8("nonlocal-r101-d8", nlHead(false)),
	"dnl-r101-d8":      r101d8("dnl-r101-d8", nlHead(true)),
	"gcnet-r101-d8":    r101d8("gcnet-r101-d8", gcHead),
	"encnet-r101-d8":   r101d8("encnet-r101-d8", encHead),
	"apcnet-r101-d8":   r101d8("apcnet-r101-d8", apcHead),
	"atss-r50":         atssR50,
	"fsaf-r50":         fsafR50,
	"gfl-x101":         gflX101,
	"centernet-r18":    centernetR18,
	"rtmdet-x":         rtmdetX,
	"efficientdet-d1":  efficientDetD1,
	"colorization-v2":  colorizationV2,
	"bert-base":        func() (*graph.Graph, error) { return bert("bert-base", 12, 768, 12, 128) },
	"bert-large":       func() (*graph.Graph, error) { return bert("bert-large", 24, 1024, 16, 128) },
}

// Names lists the zoo's models in sorted order.
func Names() []string {
	return slices.Sorted(maps.Keys(builders))
}

// Build returns a freshly built, annotated graph of the named model.
func Build(name string) (*graph.Graph, error) {
	f, ok := builders[strings.ToLower(name)]
	if !ok {
		return nil, fmt.Errorf("zoo model %q: unknown; known models: %s", name, strings.Join(Names(), ", "))
	}
	return f()
}
