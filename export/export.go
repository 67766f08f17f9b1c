// Package export turns a plan into the files of the serving systems users already run:
// a Triton model repository (config.pbtxt per model), KServe InferenceService and
// InferenceGraph manifests and a Ray Serve config file, each from the target's documentation.
//
// Targets are plug-ins (target.go): a system supplies its plan as a layout (Layout), and every
// registered target that renders it becomes one of the system's Exporters, which it registers
// in its registry entry (internal/registry/system.Exporting); an exporter returns an in-memory
// file set. `plan export` looks the plan's system up, validates the files against the
// targets' schemas (Registry.Validate) and writes them atomically (Write). Every exporter records, on each exported unit, the plan
// placement it came from (Placement) so that ReadBack recovers placements and batch sizes
// from the files alone: the round-trip tests compare them with the plan's.
package export

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/profiler/onnx"
)

// Exporter writes one system's plans for one target.
type Exporter struct {
	// Target is the target's name (Target.Name).
	Target string
	// Export builds the files; paths are relative, slash-separated.
	Export func(p *formats.Plan, o Options) (Files, error)
}

// Options are the settings of one export.
type Options struct {
	// Name prefixes every exported object (DNS-1123 label; default "plan"): the plan's
	// metadata name, or the plan file's base name.
	Name string
	// Model, when set, is the ONNX model the plan serves: exporters that cut it write each
	// partition's subgraph beside its config (Triton: <model>/1/model.onnx).
	Model *onnx.Model
	// StorageURI is the KServe storageUri prefix of the Triton repository (default
	// "pvc://plan-models"); a predictor's storageUri is StorageURI/<triton model name>.
	StorageURI string
	// ImportPath is the Ray Serve application's import_path (default "plan_ray:app"): the
	// user's module that builds a deployment from user_config.
	ImportPath string
	// NodeLabels are the cluster file's node labels per GPU type (gpus[].node_labels): they
	// replace the built-in nvidia.com/gpu.product selector of that type (gpulabels.go).
	NodeLabels map[string]map[string]string
	// PerServer is each GPU type's GPUs per server (the cluster's gpus[].per_server): Triton
	// GPU ids count within a server (tritonServers); a type without it is one server.
	PerServer map[string]int
	// Prometheus is the server the autoscalers' triggers query (default DefaultPrometheus).
	Prometheus string
	// Image is the coordinator's image (default DefaultImage).
	Image string
	// ModelsClaim is the PersistentVolumeClaim holding a Triton repository (default: the
	// claim of a pvc:// StorageURI, else "plan-models").
	ModelsClaim string
}

// NodeLabelsOf collects a cluster's node_labels per GPU type (nil cluster: none).
func NodeLabelsOf(c *formats.Cluster) map[string]map[string]string {
	if c == nil {
		return nil
	}
	out := map[string]map[string]string{}
	for _, g := range c.GPUs {
		if len(g.NodeLabels) > 0 {
			out[g.Type] = g.NodeLabels
		}
	}
	return out
}

// PerServerOf collects a cluster's per_server per GPU type (nil cluster: none).
func PerServerOf(c *formats.Cluster) map[string]int {
	if c == nil {
		return nil
	}
	out := map[string]int{}
	for _, g := range c.GPUs {
		if g.PerServer > 0 {
			out[g.Type] = g.PerServer
		}
	}
	return out
}

// Defaults fills the zero fields of o.
func (o Options) Defaults() Options {
	if o.Name == "" {
		o.Name = "plan"
	}
	o.Name = DNSLabel(o.Name)
	if o.StorageURI == "" {
		o.StorageURI = "pvc://plan-models"
	}
	o.StorageURI = strings.TrimRight(o.StorageURI, "/")
	if o.ImportPath == "" {
		o.ImportPath = "plan_ray:app"
	}
	if o.Prometheus == "" {
		o.Prometheus = DefaultPrometheus
	}
	if o.Image == "" {
		o.Image = DefaultImage
	}
	if o.ModelsClaim == "" {
		o.ModelsClaim = "plan-models"
		if rest, ok := strings.CutPrefix(o.StorageURI, "pvc://"); ok && rest != "" {
			o.ModelsClaim, _, _ = strings.Cut(rest, "/")
		}
	}
	return o
}

// withPlan fills PerServer from the plan's embedded cluster when the options give none.
func (o Options) withPlan(p *formats.Plan) Options {
	if o.PerServer == nil && p != nil && p.Provenance.Embedded != nil {
		o.PerServer = PerServerOf(p.Provenance.Embedded.Cluster)
	}
	return o
}

// Files is an exported file set: relative slash-separated path → contents.
type Files map[string][]byte

// Names returns the paths in lexical order.
func (f Files) Names() []string {
	out := make([]string, 0, len(f))
	for k := range f {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Placement is one exported unit — a PPipe pool (one partition of one pipeline) or a PARD
// module — as the files record it. Key names it in the plan ("model/p<i>/s<j>",
// "app/module").
type Placement struct {
	Key        string
	GPU        string
	VGPU       int
	Count      int
	Batch      int
	FirstBlock int
	EndBlock   int
}

func (p Placement) String() string {
	return fmt.Sprintf("%s: %d×1/%d %s batch %d blocks [%d,%d)", p.Key, p.Count, p.VGPU, p.GPU, p.Batch, p.FirstBlock, p.EndBlock)
}

// SortPlacements orders placements by key.
func SortPlacements(ps []Placement) {
	sort.Slice(ps, func(i, j int) bool { return ps[i].Key < ps[j].Key })
}

var nonDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// DNSLabel lowers s to a Kubernetes DNS-1123 label: lower case, [a-z0-9-], no leading or
// trailing '-', at most 63 characters.
func DNSLabel(s string) string {
	s = nonDNS.ReplaceAllString(strings.ToLower(s), "-")
	s = strings.Trim(s, "-")
	if len(s) > 63 {
		s = strings.TrimRight(s[:63], "-")
	}
	if s == "" {
		s = "x"
	}
	return s
}

// ErrNotEmpty is returned by Write for an existing non-empty directory without force.
var ErrNotEmpty = errors.New("exists and is not empty")

// CheckDir reports, before any work, why files could not be written as the directory dir
// (-o, named as given): Write builds a fresh sibling directory and renames it into place,
// so dir must be a directory other than the filesystem root and other than the current
// directory or one holding it (renaming either away would pull the ground from under the
// shell: with --force, -o .. replaced the whole parent directory), an existing non-empty
// one needs force, and the directory it goes in must take new files (missing directories
// on the way are created, as export always has: then the nearest existing one must).
func CheckDir(dir string, force bool) error {
	if dir == "" {
		return errors.New("-o: an output directory is required")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("-o %s: %w", dir, err)
	}
	if abs == filepath.Dir(abs) {
		// The root (or a volume's): it has no parent to hold a sibling directory.
		return fmt.Errorf("-o %s: is the filesystem root: name a directory to create or replace", dir)
	}
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(abs, wd); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			what := "the current directory"
			if rel != "." {
				what = "a directory holding the current directory"
			}
			return fmt.Errorf("-o %s: is %s, which the export would replace whole: name a new directory (or an existing one to replace, with --force)", dir, what)
		}
	}
	parent := filepath.Dir(abs)
	for {
		if _, err := os.Stat(parent); !errors.Is(err, fs.ErrNotExist) || parent == filepath.Dir(parent) {
			break
		}
		parent = filepath.Dir(parent)
	}
	if err := formats.CheckOutputDir(parent); err != nil {
		return fmt.Errorf("-o %s: %s: %w (the export writes a sibling directory there, then renames it into place)", dir, parent, err)
	}
	switch st, err := os.Stat(abs); {
	case err == nil && !st.IsDir():
		return fmt.Errorf("-o %s: exists and is not a directory: name a directory to create or replace", dir)
	case err == nil:
		ents, err := os.ReadDir(abs)
		if err != nil {
			return fmt.Errorf("-o %s: %w", dir, err)
		}
		if len(ents) > 0 && !force {
			return fmt.Errorf("-o %s: %w: pass --force to replace it", dir, ErrNotEmpty)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("-o %s: %w", dir, err)
	}
	return nil
}

// Write writes files under dir atomically: into a fresh sibling directory first, which then
// replaces dir (an existing non-empty dir needs force, and is replaced whole). A failure
// leaves dir as it was. dir must pass CheckDir.
func Write(dir string, files Files, force bool) error {
	if err := CheckDir(dir, force); err != nil {
		return err
	}
	given := dir
	dir, _ = filepath.Abs(dir)
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("-o %s: %w", given, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".export-")
	if err != nil {
		return fmt.Errorf("-o %s: %w", given, err)
	}
	defer os.RemoveAll(tmp)
	for _, name := range files.Names() {
		if !fs.ValidPath(name) || name == "." {
			return fmt.Errorf("export: invalid file name %q", name)
		}
		p := filepath.Join(tmp, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, files[name], 0o644); err != nil {
			return err
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	old := ""
	if _, err := os.Stat(dir); err == nil {
		old = tmp + ".old"
		if err := os.Rename(dir, old); err != nil {
			return fmt.Errorf("-o %s: %w", given, err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if old != "" {
			_ = os.Rename(old, dir)
		}
		return fmt.Errorf("-o %s: %w", given, err)
	}
	if old != "" {
		return os.RemoveAll(old)
	}
	return nil
}
