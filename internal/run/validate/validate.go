// Package validate is `plan validate`: every file given read strictly by its kind — the five
// documents (profile, cluster, workload, plan, trace) with their semantic rules and the
// cross-file checks of the files given together, a schedule, validation records, and every
// other file plan writes (reports, request logs, the frontier, each bench's bench.json) as its
// writer wrote it — or, with a schema kind, that kind's JSON Schema.
package validate

import (
	"context"
	"fmt"
	"strings"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/internal/onformats/benchapi"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/planner/schedule"
)

// Args are plan validate's inputs.
type Args struct {
	// Files to check ("-" is standard input); a file named twice is checked once.
	Files []string
	// Schema, when set, prints the JSON Schema of that kind (any case) instead: Files must be
	// empty.
	Schema string
	// Use is --for: what profiles are checked for, "plan" (the default when empty) or
	// "replay" (formats.ProfileUse).
	Use string
	// Systems is the registry whose sections the documents are read with.
	Systems *systems.Registry
	// ToolBenches are the benches besides the systems' own (plan bench solver, speed): their
	// bench.json files are recognised too.
	ToolBenches []func() benchapi.Bench
}

// Run checks a.Files, printing every problem to stderr as FILE: FIELD.PATH: VALUE: RULE and
// each good file to stdout (or every file as JSON with --output json); a file with a problem
// is a usage error (exit 2). With a.Schema it prints that kind's JSON Schema.
func Run(ctx context.Context, a Args, io *run.IO) error {
	if a.Schema != "" {
		if len(a.Files) > 0 {
			return run.UsageErrorf("--schema takes no files")
		}
		return printSchema(io, a.Systems, a.Schema)
	}
	if len(a.Files) == 0 {
		return run.UsageErrorf("validate: give at least one FILE (or --schema KIND)")
	}
	use := string(formats.UsePlan)
	if a.Use != "" {
		use = a.Use
	}
	u, err := formats.ParseProfileUse(use)
	if err != nil {
		return run.UsageErrorf("--for: %v", err)
	}
	return runFiles(ctx, a, io, u)
}

// Result is one file's outcome in `plan validate --output json`.
type Result struct {
	File   string  `json:"file"`
	Kind   string  `json:"kind,omitempty"`
	OK     bool    `json:"ok"`
	Errors []Issue `json:"errors"`
}

// Issue is one problem: the field path, the offending value, the rule it breaks, and
// the whole line as printed on stderr.
type Issue struct {
	Path    string `json:"path,omitempty"`
	Value   string `json:"value,omitempty"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

func printSchema(io *run.IO, reg *systems.Registry, kind string) error {
	for _, k := range formats.Kinds {
		if strings.EqualFold(k, kind) {
			b, err := formats.Schema(k, reg.Sections())
			if err != nil {
				return err
			}
			_, err = io.Out.Write(b)
			return err
		}
	}
	return run.UsageErrorf("--schema: %q: must be one of %s", kind, strings.Join(formats.Kinds, ", "))
}

func runFiles(ctx context.Context, a Args, io *run.IO, use formats.ProfileUse) error {
	args := a.Files
	// The same file named twice is checked once.
	var files []string
	seen := map[string]bool{}
	for _, f := range args {
		if !seen[f] {
			seen[f] = true
			files = append(files, f)
		}
	}
	results := make([]Result, len(files))
	byName := map[string]int{}
	docs := map[string]formats.Document{}
	add := func(i int, errs formats.ErrorList) {
		for _, e := range errs {
			results[i].Errors = append(results[i].Errors, Issue{Path: e.Path, Value: e.Value, Rule: e.Rule, Message: e.Error()})
		}
	}
	for i, f := range files {
		name := f
		if f == "-" {
			name = "<stdin>"
		}
		results[i].File = name
		byName[name] = i
		data, err := readInput(ctx, io, f)
		if err != nil {
			add(i, formats.Problems(err))
			continue
		}
		if t, ok, err := formats.ParseForeignTrace(name, data); ok {
			// The public trace formats --trace reads as they are (Azure LLM CSV,
			// Mooncake JSONL), detected by content as --trace detects them: read as a
			// document, a JSON Lines file only said "trailing data after the document",
			// and a line past the reader's limit never said which line or what limit.
			results[i].Kind = formats.KindTrace
			if err != nil {
				add(i, formats.Problems(err))
				continue
			}
			docs[name] = t
			continue
		}
		if kind, errs, ok := OtherKind(name, data, a.Systems.Sections()); ok {
			// The kinds other commands write beside the five documents: a schedule
			// (solve --window) and validation records (import validation).
			results[i].Kind = kind
			add(i, errs)
			continue
		}
		if k, ok := KindOf(a.Systems, a.ToolBenches, data); ok {
			// Reports, request logs, the frontier and bench.json: read strictly as
			// their writer wrote them.
			results[i].Kind = k.Name
			if _, err := k.Reread(name, data); err != nil {
				add(i, formats.Problems(err))
			}
			continue
		}
		// Unknown fields and the rules the rest of the file breaks, in one run.
		doc, unknown, err := formats.ParseBeyondUnknown(name, data, a.Systems.Sections())
		if len(unknown) > 0 {
			add(i, unknown)
		}
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
			add(i, formats.Validate(doc, a.Systems.Sections()).WithFile(name))
		}
		docs[name] = doc
	}
	if ctx.Err() != nil {
		return run.CheckFailed(fmt.Errorf("validate: interrupted"))
	}
	for _, e := range formats.CheckSet(docs, a.Systems.Sections()) {
		if i, ok := byName[e.File]; ok {
			add(i, formats.ErrorList{e})
		}
	}

	bad, problems := 0, 0
	for i := range results {
		r := &results[i]
		r.OK = len(r.Errors) == 0
		if r.Errors == nil {
			r.Errors = []Issue{}
		}
		if !r.OK {
			bad++
			problems += len(r.Errors)
		}
		// A long list is cut (48k duplicate names printed 48,219 lines);
		// -O json still lists every problem.
		for _, e := range r.Errors[:min(len(r.Errors), formats.MaxListedProblems)] {
			fmt.Fprintln(io.Err, e.Message)
		}
		if more := formats.MoreProblems(len(r.Errors)); more != "" {
			fmt.Fprintf(io.Err, "%s: %s\n", r.File, more)
		}
	}
	if io.JSONOutput() {
		if err := io.WriteJSON(results); err != nil {
			return err
		}
	} else {
		for _, r := range results {
			if r.OK {
				fmt.Fprintf(io.Out, "%s: ok (%s)\n", r.File, r.Kind)
			}
		}
	}
	if bad > 0 {
		return &run.ExitError{Code: run.ExitUsage, Err: fmt.Errorf("validate: %d of %d files have problems (%d in all)", bad, len(results), problems)}
	}
	return nil
}

// readInput reads a file, or standard input for "-"; both are bounded, a file must be a
// regular one and a read of standard input ends on SIGINT/SIGTERM (ctx).
func readInput(ctx context.Context, io *run.IO, f string) ([]byte, error) {
	if f != "-" {
		return formats.ReadBytes(f)
	}
	return formats.ReadStream(ctx, "<stdin>", io.In, formats.MaxFileBytes)
}

// OtherKind checks the files plan writes that are not one of formats.Kinds: a
// Schedule (`solve --window`: its windows, then every window's and the peak's embedded plan as
// a plan) and ValidationRecords (`import validation`). ok is false for any other file.
func OtherKind(name string, data []byte, secs *formats.SectionSet) (kind string, errs formats.ErrorList, ok bool) {
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
			doc, err := formats.Parse(name+": "+path, e.Plan, secs)
			if err != nil {
				errs = append(errs, formats.Problems(err)...)
				continue
			}
			errs = append(errs, formats.Validate(doc, secs).WithFile(name+": "+path)...)
		}
		return schedule.Kind, errs, true
	case cascadesec.IsValidationRecords(data):
		if _, err := cascadesec.ImportValidation(name, data, ""); err != nil {
			return cascadesec.KindValidationRecords, formats.Problems(err), true
		}
		return cascadesec.KindValidationRecords, nil, true
	}
	return "", nil, false
}
