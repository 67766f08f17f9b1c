package cli

import (
	"errors"
	"path/filepath"
	"strings"

	"github.com/plan-dev/plan/formats"
)

// pardFileNames puts the file that holds each problem in front of it: pipelines[...] paths
// are in the workload, cluster.* paths in the cluster, so messages read
// `workload.yaml: pipelines[0].slo: 5ms: rule`.
func pardFileNames(err error, o *solveOptions) error {
	var el formats.ErrorList
	if !errors.As(err, &el) {
		return err
	}
	cluster := "demo cluster"
	if o.cluster != "" {
		cluster = filepath.Base(o.cluster)
	}
	for _, e := range el {
		switch {
		case e.File != "":
		case strings.HasPrefix(e.Path, "pipelines"):
			e.File = filepath.Base(o.workload)
		case strings.HasPrefix(e.Path, "cluster."):
			e.File, e.Path = cluster, strings.TrimPrefix(e.Path, "cluster.")
		}
	}
	return el
}
