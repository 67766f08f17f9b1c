package cli

import (
	"runtime"

	"github.com/spf13/cobra"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/base/buildinfo"
	"github.com/plan-dev/plan/solver"
)

// versionInfo is what `plan version` reports.
type versionInfo struct {
	Module   string `json:"module"`
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
	Solver   string `json:"solver"`
	// SolverEngine is the engine that runs HiGHS: native (wasm2c + cgo) or wazero.
	SolverEngine string `json:"solver_engine"`
	APIVersion   string `json:"api_version"`
}

// buildVersion reads the version and commit the Makefile stamps (internal/base/buildinfo), with
// the Go, platform and format versions beside them.
func buildVersion() versionInfo {
	b := buildinfo.Read()
	return versionInfo{Module: b.Module, Version: b.Version, Revision: b.Revision, Modified: b.Modified,
		Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, APIVersion: formats.APIVersion}
}

// ToolVersion is the version string recorded in plan provenance.
func ToolVersion() string {
	v := buildVersion()
	s := v.Version
	if v.Revision != "" {
		s += "+" + v.Revision[:min(12, len(v.Revision))]
	}
	return s
}

func newVersionCmd(app *App) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the module, Go and HiGHS versions",
		Long: `Print plan's module version and VCS revision, the Go toolchain it was built with, the
HiGHS version of the in-process solver, and the file-format apiVersion it reads and writes.`,
		Example: `  plan version
  plan version --output json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := buildVersion()
			v.Solver = solver.Version()
			if eng, err := solver.Engine(); err == nil {
				v.SolverEngine = eng
			} else {
				v.SolverEngine = "unavailable: " + err.Error()
			}
			if app.JSONOutput() {
				return app.WriteJSON(v)
			}
			rev := v.Revision
			if rev == "" {
				rev = "-"
			} else if v.Modified {
				rev += " (modified)"
			}
			app.Table([]string{"component", "version"}, [][]string{
				{"plan", v.Version},
				{"module", v.Module},
				{"revision", rev},
				{"go", v.Go + " " + v.Platform},
				{"solver", v.Solver},
				{"solver engine", v.SolverEngine},
				{"file format", v.APIVersion},
			})
			return nil
		},
	}
}
