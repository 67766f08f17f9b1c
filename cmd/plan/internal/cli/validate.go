package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/planner/schedule"
)

type validateOptions struct {
	schema string
	// use is --for: what the profiles are checked for (formats.ProfileUse).
	use string
}

// validateResult is one file's outcome in `plan validate --output json`.
type validateResult struct {
	File   string          `json:"file"`
	Kind   string          `json:"kind,omitempty"`
	OK     bool            `json:"ok"`
	Errors []validateIssue `json:"errors"`
}

// validateIssue is one problem: the field path, the offending value, the rule it breaks, and
// the whole line as printed on stderr.
type validateIssue struct {
	Path    string `json:"path,omitempty"`
	Value   string `json:"value,omitempty"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

func newValidateCmd(app *App) *cobra.Command {
	o := &validateOptions{}
	cmd := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check profile, cluster, workload, plan and trace files",
		Long: `validate decodes each file by its kind (apiVersion plan/v1; YAML or JSON), strictly:
unknown fields, missing required fields, wrong types and NaN or infinite numbers are errors.
It then checks every semantic rule of the kind, and, across all the files given together,
that they agree: workloads name profiled models, profiles have latencies for the cluster's
GPU types, plans use the cluster's GPU types and the profiles' models and blocks, traces
target the workload's models and applications.

Every problem is printed to stderr, one per line, as FILE: FIELD.PATH: VALUE: RULE. Good
files are listed on stdout as FILE: ok (KIND), or, with --output json, every file as
{file, kind, ok, errors[]}. The exit status is 0 when every file is good and 2 otherwise.
Nothing is written. FILE "-" reads standard input.

Besides the documents, validate reads every other file plan writes, strictly, as its
writer wrote it: a schedule (solve --window), validation records (import validation),
simulation, schedule and autopilot reports (simulate --report, load --report), request
logs (simulate --requests-out), the frontier (frontier --output json) and each bench's
bench.json.

--for says what the profiles are for: plan (the default: plan solve, whose planner reads
every field of an LLM profile) or replay (plan simulate --llm: one engine, which reads its
iteration curves, KV capacity and engine block; the planner-only fields may be left out).

--schema KIND prints the JSON Schema (draft 2020-12) of a kind instead; the same schemas
are published in the repository's schema/ folder.`,
		Example: `  plan validate cluster.yaml
  plan validate cluster.yaml profile.json workload.yaml plan.json
  plan validate plan.json --output json | jq '.[] | select(.ok | not)'
  plan validate --for replay engine-profile.json    # a profile only replayed (plan simulate --llm)
  cat workload.yaml | plan validate -
  plan validate --schema Workload > workload.schema.json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.schema != "" {
				if len(args) > 0 {
					return run.UsageErrorf("--schema takes no files")
				}
				return printSchema(app, o.schema)
			}
			if len(args) == 0 {
				return run.UsageErrorf("validate: give at least one FILE (or --schema KIND)")
			}
			use, err := formats.ParseProfileUse(o.use)
			if err != nil {
				return run.UsageErrorf("--for: %v", err)
			}
			return runValidate(cmd.Context(), app, args, use)
		},
	}
	cmd.Flags().StringVar(&o.schema, "schema", "", "print the JSON Schema of a kind ("+strings.Join(formats.Kinds, ", ")+") and exit")
	cmd.Flags().StringVar(&o.use, "for", string(formats.UsePlan), "what profiles are checked for: plan (every field a planner reads) or replay (one engine: plan simulate --llm)")
	return cmd
}

func printSchema(app *App, kind string) error {
	for _, k := range formats.Kinds {
		if strings.EqualFold(k, kind) {
			b, err := formats.SchemaWith(k, app.Systems.Sections())
			if err != nil {
				return err
			}
			_, err = app.Out.Write(b)
			return err
		}
	}
	return run.UsageErrorf("--schema: %q: must be one of %s", kind, strings.Join(formats.Kinds, ", "))
}

func runValidate(ctx context.Context, app *App, args []string, use formats.ProfileUse) error {
	// The same file named twice is checked once.
	var files []string
	seen := map[string]bool{}
	for _, f := range args {
		if !seen[f] {
			seen[f] = true
			files = append(files, f)
		}
	}
	results := make([]validateResult, len(files))
	byName := map[string]int{}
	docs := map[string]formats.Document{}
	add := func(i int, errs formats.ErrorList) {
		for _, e := range errs {
			results[i].Errors = append(results[i].Errors, validateIssue{Path: e.Path, Value: e.Value, Rule: e.Rule, Message: e.Error()})
		}
	}
	for i, f := range files {
		name := f
		if f == "-" {
			name = "<stdin>"
		}
		results[i].File = name
		byName[name] = i
		data, err := readInput(ctx, app, f)
		if err != nil {
			add(i, formats.Problems(err))
			continue
		}
		if kind, errs, ok := validateOtherKind(name, data, app.Systems.Sections()); ok {
			// The kinds other commands write beside the five documents: a schedule
			// (solve --window) and validation records (import validation).
			results[i].Kind = kind
			add(i, errs)
			continue
		}
		if k, ok := writtenKindOf(app, data); ok {
			// Reports, request logs, the frontier and bench.json: read strictly as
			// their writer wrote them.
			results[i].Kind = k.kind
			if _, err := k.reread(name, data); err != nil {
				add(i, formats.Problems(err))
			}
			continue
		}
		doc, err := formats.ParseWith(name, data, app.Systems.Sections())
		if err != nil && use != formats.UsePlan {
			// A profile for another use may leave out what only a planner reads.
			if p, perr := formats.ParseProfileFor(name, data, use); perr == nil {
				doc, err = p, nil
			}
		}
		if err != nil {
			add(i, formats.Problems(err))
			continue
		}
		results[i].Kind = doc.GetKind()
		if p, ok := doc.(*formats.Profile); ok {
			add(i, p.ValidateFor(use).WithFile(name))
		} else {
			add(i, formats.ValidateWith(doc, app.Systems.Sections()).WithFile(name))
		}
		docs[name] = doc
	}
	if ctx.Err() != nil {
		return run.CheckFailed(fmt.Errorf("validate: interrupted"))
	}
	for _, e := range formats.CheckSetWith(docs, app.Systems.Sections()) {
		if i, ok := byName[e.File]; ok {
			add(i, formats.ErrorList{e})
		}
	}

	bad, problems := 0, 0
	for i := range results {
		r := &results[i]
		r.OK = len(r.Errors) == 0
		if r.Errors == nil {
			r.Errors = []validateIssue{}
		}
		if !r.OK {
			bad++
			problems += len(r.Errors)
		}
		// A long list is cut (48k duplicate names printed 48,219 lines);
		// -O json still lists every problem.
		for _, e := range r.Errors[:min(len(r.Errors), formats.MaxListedProblems)] {
			fmt.Fprintln(app.Err, e.Message)
		}
		if more := formats.MoreProblems(len(r.Errors)); more != "" {
			fmt.Fprintf(app.Err, "%s: %s\n", r.File, more)
		}
	}
	if app.JSONOutput() {
		if err := app.WriteJSON(results); err != nil {
			return err
		}
	} else {
		for _, r := range results {
			if r.OK {
				fmt.Fprintf(app.Out, "%s: ok (%s)\n", r.File, r.Kind)
			}
		}
	}
	if bad > 0 {
		return &ExitError{Code: ExitUsage, Err: fmt.Errorf("validate: %d of %d files have problems (%d in all)", bad, len(results), problems)}
	}
	return nil
}

// readInput reads a file, or standard input for "-"; both are bounded, a file must be a
// regular one and a read of standard input ends on SIGINT/SIGTERM (ctx).
func readInput(ctx context.Context, app *App, f string) ([]byte, error) {
	if f != "-" {
		return formats.ReadBytes(f)
	}
	return formats.ReadStream(ctx, "<stdin>", app.In, formats.MaxFileBytes)
}

// validateOtherKind checks the files plan writes that are not one of formats.Kinds: a
// Schedule (`solve --window`: its windows, then every window's and the peak's embedded plan as
// a plan) and ValidationRecords (`import validation`). ok is false for any other file.
func validateOtherKind(name string, data []byte, secs *formats.SectionSet) (kind string, errs formats.ErrorList, ok bool) {
	switch {
	case schedule.IsSchedule(data):
		s, err := schedule.Decode(name, data)
		if err != nil {
			return schedule.Kind, formats.Problems(err), true
		}
		entries := append([]schedule.Entry{s.Peak}, s.Windows...)
		for i, e := range entries {
			path := fmt.Sprintf("windows[%d].plan", i-1)
			if i == 0 {
				path = "peak.plan"
			}
			doc, err := formats.ParseWith(name+": "+path, e.Plan, secs)
			if err != nil {
				errs = append(errs, formats.Problems(err)...)
				continue
			}
			errs = append(errs, formats.ValidateWith(doc, secs).WithFile(name+": "+path)...)
		}
		return schedule.Kind, errs, true
	case formats.IsValidationRecords(data):
		if _, err := formats.ImportValidation(name, data, ""); err != nil {
			return formats.KindValidationRecords, formats.Problems(err), true
		}
		return formats.KindValidationRecords, nil, true
	}
	return "", nil, false
}
