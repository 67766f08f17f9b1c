// Package demo embeds the small demo inputs (a cluster, and the demo model's profile) that
// `plan profile`, `plan solve` and `plan simulate` use when given no input files, so the
// quickstart works on a fresh machine.
package demo

import (
	_ "embed"
	"fmt"

	"github.com/plan-dev/plan/formats"
)

//go:embed cluster.yaml
var clusterYAML []byte

// Cluster returns the demo cluster: 4×L4 + 12×P4.
func Cluster() (*formats.Cluster, error) {
	c, err := formats.DecodeInto[*formats.Cluster]("demo/cluster.yaml", clusterYAML)
	if err != nil {
		return nil, fmt.Errorf("embedded demo cluster: %w", err)
	}
	return c, nil
}
