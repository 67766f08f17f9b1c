// Package export is `plan export`'s work: it writes a plan as the files of a serving system
// (a target of export/targets' registry: Triton, KServe, Ray Serve, ...) through the exporter
// the plan's system registers for the target,
// or, with --check, validates an existing export directory against the same schemas and
// run-time rules.
package export

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	exporter "github.com/plan-dev/plan/export"
	"github.com/plan-dev/plan/export/targets"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/registry/system"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/profiler/onnx"
)

// Args are `plan export`'s inputs.
type Args struct {
	// Path is the plan file, or with Check the export directory.
	Path string
	// To is the target, a name of export/targets' registry (--to; required unless Check).
	To string
	// Out is the output directory (-o; required unless Check).
	Out string
	// Force replaces an existing non-empty output directory (--force; default false).
	Force bool
	// Model is the ONNX model the plan serves, written beside each partition's config
	// (--model; default none).
	Model string
	// Name prefixes the exported objects (--name; default the plan's metadata.name, else its
	// file name).
	Name string
	// StorageURI is KServe's storageUri prefix of the Triton repository (--storage-uri;
	// default the exporter's, pvc://plan-models).
	StorageURI string
	// ImportPath is Ray Serve's import_path of the application builder (--import-path;
	// default the exporter's, plan_ray:app).
	ImportPath string
	// Cluster is a cluster file whose gpus[].node_labels select each GPU type's nodes
	// (--cluster; default the plan's embedded cluster).
	Cluster string
	// Check validates the existing export directory Path instead of exporting (--check).
	Check bool
	// Prometheus is the Prometheus the autoscalers query (--prometheus; default the
	// exporter's).
	Prometheus string
	// Image is the plan serve coordinator's image in deploy/ (--image; default the
	// exporter's).
	Image string
	// Systems is the system registry the plan's system and exporters come from.
	Systems *systems.Registry
}

// Run exports the plan a.Path to a.To in a.Out, or with a.Check validates the directory
// a.Path.
func Run(_ context.Context, a Args, io *run.IO) error {
	if a.Check {
		return runCheck(a, io)
	}
	return runExport(a, io)
}

// report is `plan export --output json`.
type report struct {
	Plan   string   `json:"plan"`
	System string   `json:"system"`
	Target string   `json:"target"`
	Dir    string   `json:"dir"`
	Files  []string `json:"files"`
}

// exporterFor finds the system's exporter for target.
func exporterFor(sys system.Plugin, target string) (*exporter.Exporter, error) {
	var exs []exporter.Exporter
	if e, ok := sys.(system.Exporting); ok {
		exs = e.Exporters()
	}
	for i := range exs {
		if exs[i].Target == target {
			return &exs[i], nil
		}
	}
	return nil, fmt.Errorf("system %s has no exporter for target %s", sys.Name(), target)
}

func runExport(a Args, io *run.IO) error {
	path := a.Path
	reg := targets.Registry()
	if _, ok := reg.Lookup(a.To); !ok {
		return run.UsageErrorf("--to: %q: must be one of %s", a.To, strings.Join(reg.Names(), ", "))
	}
	// The output directory is checked before any work, as every output is.
	if err := exporter.CheckDir(a.Out, a.Force); err != nil {
		return run.UsageError(err)
	}
	plan, sys, err := run.ReadPlanSystem(a.Systems, path)
	if err != nil {
		return err
	}
	ex, err := exporterFor(sys, a.To)
	if err != nil {
		return run.UsageErrorf("%s: %v", path, err)
	}
	opts := exporter.Options{Name: a.Name, StorageURI: a.StorageURI, ImportPath: a.ImportPath, Prometheus: a.Prometheus, Image: a.Image}
	if e := plan.Provenance.Embedded; e != nil {
		opts.NodeLabels = exporter.NodeLabelsOf(e.Cluster)
		opts.PerServer = exporter.PerServerOf(e.Cluster)
	}
	if a.Cluster != "" {
		c, err := formats.ReadInto[*formats.Cluster](a.Cluster, nil)
		if err != nil {
			return run.UsageError(err)
		}
		for gpu, n := range exporter.PerServerOf(c) {
			if opts.PerServer == nil {
				opts.PerServer = map[string]int{}
			}
			opts.PerServer[gpu] = n
		}
		for gpu, ls := range exporter.NodeLabelsOf(c) {
			if opts.NodeLabels == nil {
				opts.NodeLabels = map[string]map[string]string{}
			}
			opts.NodeLabels[gpu] = ls
		}
	}
	if opts.Name == "" {
		opts.Name = plan.Metadata.Name
	}
	if opts.Name == "" {
		opts.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	if a.Model != "" {
		if opts.Model, err = onnx.Load(a.Model); err != nil {
			return run.UsageErrorf("--model %s: %v", a.Model, err)
		}
	}
	files, err := ex.Export(plan, opts)
	if err != nil {
		return run.UsageErrorf("%s: export to %s: %v", path, a.To, err)
	}
	if err := reg.Validate(files, false); err != nil {
		return err // a bug of the exporter, not of the input: exit 1
	}
	if err := exporter.Write(a.Out, files, a.Force); err != nil {
		return run.UsageError(err)
	}
	if io.JSONOutput() {
		b, err := json.MarshalIndent(report{Plan: path, System: sys.Name(), Target: a.To, Dir: a.Out, Files: files.Names()}, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintln(io.Out, string(b))
		return nil
	}
	if !io.Quiet {
		fmt.Fprintf(io.Out, "exported %s (%s) to %s: %d file(s) in %s\n", path, sys.Name(), a.To, len(files), a.Out)
	}
	return nil
}

// ownsAny reports whether a file of the set, deploy/ left out, is one of t's.
func ownsAny(t exporter.Target, files exporter.Files) bool {
	for name := range files {
		if !exporter.IsDeploy(name) && t.Owns(name) {
			return true
		}
	}
	return false
}

// maxCheckFile bounds what --check reads of one file: configs and manifests are small; model
// files (.onnx) are listed, never read.
const maxCheckFile = 16 << 20

// runCheck is `plan export --check DIR`: the export's validation applied to a
// directory on disk, with the rules of a deployable repository.
func runCheck(a Args, io *run.IO) error {
	dir := a.Path
	if a.To != "" || a.Out != "" || a.Model != "" || a.Cluster != "" || a.Prometheus != "" || a.Image != "" {
		return run.UsageErrorf("--check %s: validates an existing directory; it takes no --to, -o, --model or --cluster", dir)
	}
	files := exporter.Files{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		// A deployable repository holds regular files only: a symbolic link would make the
		// check read (and pass) a file outside the directory, and a named pipe or a device
		// would block or never end. Each is refused with what it is, never skipped.
		if t := d.Type(); !t.IsRegular() {
			what := "not a regular file (" + t.String() + ")"
			switch {
			case t&fs.ModeSymlink != 0:
				target, _ := os.Readlink(p)
				what = "a symbolic link to " + formats.EchoName(target)
			case t&fs.ModeNamedPipe != 0:
				what = "a named pipe (FIFO)"
			case t&(fs.ModeDevice|fs.ModeCharDevice) != 0:
				what = "a device"
			}
			return fmt.Errorf("%s: %s: a deployable repository holds regular files only", formats.EchoName(p), what)
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if strings.HasSuffix(rel, ".onnx") {
			files[rel] = nil
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Size() > maxCheckFile {
			return fmt.Errorf("%s: %d bytes: larger than any file plan exports (%d)", p, info.Size(), maxCheckFile)
		}
		// ReadBytesLimit checks again what it opens (the entry may have been replaced since).
		b, err := formats.ReadBytesLimit(p, maxCheckFile)
		files[rel] = b
		return err
	})
	if err != nil {
		return run.UsageErrorf("--check: %v", err)
	}
	if len(files) == 0 {
		return run.UsageErrorf("--check %s: no files", dir)
	}
	reg := targets.Registry()
	if err := reg.Validate(files, true); err != nil {
		return run.UsageErrorf("%s: %v", dir, err)
	}
	// Targets whose files alone say what was exported read them back: an export that
	// validates but does not read back into a plan is refused too.
	var read []string
	for _, t := range reg.Targets() {
		rb, ok := t.(exporter.ReadBacker)
		if !ok || !ownsAny(t, files) {
			continue
		}
		s, err := rb.ReadBackSummary(files)
		if err != nil {
			return run.UsageErrorf("%s: read back as %s: %v", dir, t.Name(), err)
		}
		read = append(read, s)
	}
	if !io.Quiet {
		fmt.Fprintf(io.Out, "ok: %s: %d file(s) pass the schemas and the run-time rules\n", dir, len(files))
		for _, s := range read {
			fmt.Fprintf(io.Out, "read back: %s\n", s)
		}
	}
	return nil
}
