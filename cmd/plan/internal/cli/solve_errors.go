package cli

import "github.com/plan-dev/plan/internal/system"

// systemFileNames lets the chosen system put the file that holds each problem of a failed
// solve in front of it (system.Sections.SolveErrors): the cli knows which files were given,
// the system knows which paths live in which file.
func systemFileNames(err error, o *solveOptions, sys system.System) error {
	if sys.Sections.SolveErrors == nil {
		return err
	}
	names := map[string]string{"cluster": "demo cluster", "workload": o.workload}
	if o.cluster != "" {
		names["cluster"] = o.cluster
	}
	return sys.Sections.SolveErrors(err, names)
}
