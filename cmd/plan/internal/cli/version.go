package cli

import (
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/plan-dev/plan/formats"
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

// stampVersion and stampCommit are set by the Makefile's build (-ldflags -X, from git
// describe and rev-parse): a build with -buildvcs=false, or from a source tree without .git,
// records no VCS stamp, and `go build` gives the main module the version "(devel)".
// Empty: fall back to the build info.
var stampVersion, stampCommit string

// buildVersion reads the version and commit the Makefile stamps, else the module version
// and VCS stamp that `go build` embeds.
func buildVersion() versionInfo {
	v := versionInfo{
		Module:     "github.com/plan-dev/plan",
		Version:    "(devel)",
		Go:         runtime.Version(),
		Platform:   runtime.GOOS + "/" + runtime.GOARCH,
		APIVersion: formats.APIVersion,
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Path != "" {
			v.Module = bi.Main.Path
		}
		if bi.Main.Version != "" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if stampVersion != "" {
		v.Version = stampVersion
	}
	if stampCommit != "" && stampCommit != v.Revision {
		v.Revision, v.Modified = stampCommit, strings.HasSuffix(stampVersion, "-dirty")
	}
	return v
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
