package cli

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/plan-dev/plan/internal/base/optflag"
	"github.com/plan-dev/plan/internal/registry/system"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/internal/run"
)

// The systems table is generated from the registry (internal/registry/systems), never written by
// hand: `plan --help`, `plan systems` and `plan solve --help` show what the registry holds.

// systemInfo is one system as `plan systems -O json` prints it.
type systemInfo struct {
	Name             string   `json:"name"`
	Doc              string   `json:"doc"`
	WorkloadSections []string `json:"workload_sections"`
	DefaultWorkload  bool     `json:"default_workload"`
	Strategies       []string `json:"strategies"`
	PlanSection      string   `json:"plan_section"`
	Policies         []string `json:"policies"`
	Benches          []string `json:"benches"`
	ExportTargets    []string `json:"export_targets"`
	// SolveFlags are the planner's own `plan solve` flags with this system's defaults (the
	// options its plans record in provenance.options).
	SolveFlags []flagInfo `json:"solve_flags"`
}

// flagInfo is one planner flag.
type flagInfo struct {
	Name    string `json:"name"`
	Type    string `json:"type"`
	Default string `json:"default"`
	Usage   string `json:"usage"`
}

func infoOf(s system.Plugin) systemInfo {
	secs := s.Sections()
	in := systemInfo{Name: s.Name(), Doc: s.Doc(), WorkloadSections: nonNil(secs.WorkloadKeys()), Strategies: []string{},
		PlanSection: secs.PlanKey(), Policies: []string{}, Benches: []string{}, ExportTargets: []string{}}
	if pl, ok := s.(system.Planning); ok {
		in.DefaultWorkload, in.Strategies = pl.DefaultWorkload(), nonNil(pl.Strategies())
	}
	if d, ok := s.(system.Deploying); ok {
		for _, p := range d.Policies() {
			in.Policies = append(in.Policies, p.Name)
		}
	}
	if b, ok := s.(system.Benching); ok {
		for _, nb := range b.Benches() {
			in.Benches = append(in.Benches, nb().Help().Name)
		}
	}
	if e, ok := s.(system.Exporting); ok {
		for _, x := range e.Exporters() {
			in.ExportTargets = append(in.ExportTargets, strings.ToLower(x.Target))
		}
	}
	in.SolveFlags = []flagInfo{}
	plannerFlagSet(s).VisitAll(func(f *pflag.Flag) {
		in.SolveFlags = append(in.SolveFlags, flagInfo{Name: f.Name, Type: f.Value.Type(), Default: f.DefValue, Usage: f.Usage})
	})
	return in
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func systemInfos(reg *systems.Registry) []systemInfo {
	var out []systemInfo
	for _, s := range reg.Systems() {
		out = append(out, infoOf(s))
	}
	return out
}

// writeSystemsTable writes the systems table and one line of description per system.
func writeSystemsTable(w io.Writer, reg *systems.Registry) {
	header := []string{"SYSTEM", "WORKLOAD", "PLAN", "POLICIES", "BENCH", "EXPORT"}
	var rows [][]string
	dash := func(s []string) string {
		if len(s) == 0 {
			return "-"
		}
		return strings.Join(s, ",")
	}
	infos := systemInfos(reg)
	for _, in := range infos {
		// Long policy lists wrap onto continuation rows so the table fits a terminal.
		pols := wrapList(in.Policies, 48)
		rows = append(rows, []string{in.Name, dash(in.WorkloadSections), in.PlanSection, pols[0], dash(in.Benches), dash(in.ExportTargets)})
		for _, more := range pols[1:] {
			rows = append(rows, []string{"", "", "", more, "", ""})
		}
	}
	run.WriteTable(w, header, rows)
	fmt.Fprintln(w)
	for _, in := range infos {
		fmt.Fprintf(w, "  %-8s %s\n", in.Name, in.Doc)
	}
}

// wrapList joins items with commas into lines of at most width characters (an item longer
// than width gets a line of its own); no items give "-".
func wrapList(items []string, width int) []string {
	if len(items) == 0 {
		return []string{"-"}
	}
	var lines []string
	cur := ""
	for i, it := range items {
		if i < len(items)-1 {
			it += ","
		}
		if cur != "" && len(cur)+len(it) > width {
			lines = append(lines, cur)
			cur = ""
		}
		cur += it
	}
	return append(lines, cur)
}

// systemsTable is the table as a string, for help texts.
func systemsTable(reg *systems.Registry) string {
	var b bytes.Buffer
	writeSystemsTable(&b, reg)
	return b.String()
}

func newSystemsCmd(app *App) *cobra.Command {
	return &cobra.Command{
		Use:   "systems",
		Short: "List the serving systems: their workload and plan sections, policies, benches and export targets",
		Long: `systems lists the serving systems plan implements, from its registry: the workload section
each system's planner plans (plan solve picks the planner by the workload's sections), the plan
section its deployer reads (plan simulate, serve, check and export pick the system by it), its
runtime policies (plan simulate/serve --policy), its benches (plan bench NAME) and its export
targets (plan export --to TARGET). --output json prints the same as a JSON array, with each
system's planner strategies and its own plan solve flags with their defaults.`,
		Example: `  plan systems
  plan systems -O json | jq -r '.[] | select(.workload_sections | index("models")) | .name'`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if app.JSONOutput() {
				return app.WriteJSON(systemInfos(app.Systems))
			}
			writeSystemsTable(app.Out, app.Systems)
			return nil
		},
	}
}

// plannerFlagSet is a system's own `plan solve` flags with its own defaults.
func plannerFlagSet(s system.Plugin) *pflag.FlagSet {
	fs := pflag.NewFlagSet(s.Name(), pflag.ContinueOnError)
	if pl, ok := s.(system.Planning); ok {
		optflag.Bind(fs, pl.NewPlanner().Options())
	}
	return fs
}

// solveUsage is `plan solve`'s usage: its common flags, then each system's own flags with
// that system's defaults (a flag two planners take, such as --runtime-policy, appears under
// each with its default there).
func solveUsage(cmd *cobra.Command, reg *systems.Registry) error {
	w := cmd.OutOrStderr()
	fmt.Fprintf(w, "Usage:\n  %s\n", cmd.UseLine())
	if cmd.Example != "" {
		fmt.Fprintf(w, "\nExamples:\n%s\n", cmd.Example)
	}
	common := pflag.NewFlagSet("common", pflag.ContinueOnError)
	cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if f.Name == "help" || isCommonSolveFlag(f.Name) {
			common.AddFlag(f)
		}
	})
	fmt.Fprintf(w, "\nFlags (every planner):\n%s", common.FlagUsages())
	for _, sys := range reg.Systems() {
		s, ok := sys.(system.Planning)
		if !ok {
			continue
		}
		fs := plannerFlagSet(s)
		secs := strings.Join(s.Sections().WorkloadKeys(), ", ")
		if s.DefaultWorkload() {
			secs += "; also without --workload"
		}
		fmt.Fprintf(w, "\nFlags of the %s planner (workload sections: %s; --strategy %s):\n", s.Name(), secs, strings.Join(s.Strategies(), ", "))
		if fs.HasFlags() {
			fmt.Fprint(w, fs.FlagUsages())
		} else {
			fmt.Fprintln(w, "      (none beyond the flags of every planner)")
		}
	}
	if cmd.HasAvailableInheritedFlags() {
		fmt.Fprintf(w, "\nGlobal Flags:\n%s", cmd.InheritedFlags().FlagUsages())
	}
	return nil
}

func isCommonSolveFlag(name string) bool {
	for _, c := range commonSolveFlags {
		if c == name {
			return true
		}
	}
	return false
}

// plannersHelp lists, for solve's long help, which workload section goes to which planner.
func plannersHelp(reg *systems.Registry) string {
	var b strings.Builder
	for _, s := range reg.Systems() {
		if _, ok := s.(system.Planning); !ok {
			continue
		}
		fmt.Fprintf(&b, "  %-12s → %-8s %s\n", strings.Join(s.Sections().WorkloadKeys(), ", "), s.Name(), s.Doc())
	}
	return b.String()
}
