package pardsys

import (
	"errors"
	"strings"

	"github.com/plan-dev/plan/formats"
)

// solveErrors puts the file that holds each problem of a failed PARD solve in front of it:
// pipelines[...] paths are in the workload, cluster.* paths in the cluster, so messages read
// `workload.yaml: pipelines[0].slo: 5ms: rule`. names maps "cluster" and "workload" to the
// files given (system.Sections.SolveErrors).
func solveErrors(err error, names map[string]string) error {
	var el formats.ErrorList
	if !errors.As(err, &el) {
		return err
	}
	for _, e := range el {
		switch {
		case e.File != "":
		case strings.HasPrefix(e.Path, "pipelines"):
			e.File = names["workload"]
		case strings.HasPrefix(e.Path, "cluster."):
			e.File, e.Path = names["cluster"], strings.TrimPrefix(e.Path, "cluster.")
		}
	}
	return listOnly{list: el, err: err}
}

// listOnly prints just the field errors of err (the files now named in front of each) and
// still matches what err matches, so the exit code follows the planner's sentinel.
type listOnly struct {
	list formats.ErrorList
	err  error
}

func (e listOnly) Error() string { return e.list.Error() }
func (e listOnly) Unwrap() error { return e.err }
