package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/planner/pard"
	"github.com/plan-dev/plan/planner/ppipe"
)

// solvePARD provisions a pipeline workload (PARD): per module a GPU type, batch size and
// worker count at the fewest GPUs under Σ 2·d ≤ 0.8·SLO. solve calls it when the workload
// lists pipelines.
func solvePARD(cmd *cobra.Command, app *App, o *solveOptions, in ppipe.Inputs) error {
	pin := pard.Inputs{Workload: in.Workload, Cluster: in.Cluster, Refs: in.Refs}
	for _, p := range in.Profiles {
		pin.Profiles = append(pin.Profiles, *p)
	}
	pard.ToolVersion = buildVersion().Version
	plan, err := pard.Provision(cmd.Context(), pin, pard.Options{TimeLimit: o.timeLimit})
	if err != nil {
		if errors.Is(err, pard.ErrBadInput) {
			return usageError(pardFileNames(err, o))
		}
		return err
	}
	if err := formats.WriteFile(o.out, plan); err != nil {
		return fmt.Errorf("writing the plan: %w", err)
	}
	if app.JSONOutput() {
		return app.WriteJSON(plan)
	}
	var rows [][]string
	for _, a := range plan.PARD.Apps {
		for _, m := range a.Modules {
			rows = append(rows, []string{a.Name, a.SLO.String(), m.Name, m.GPU, strconv.Itoa(m.Batch), strconv.Itoa(m.Workers), fmt.Sprintf("%.1f", m.LatencyUs/1000)})
		}
	}
	app.Table([]string{"pipeline", "slo", "module", "gpu", "batch", "workers", "d(b) ms"}, rows)
	app.Infof("wrote %s (policy %s; run it with plan simulate %s --policy %s)", o.out, plan.PARD.Policy, o.out, plan.PARD.Policy)
	return nil
}

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
