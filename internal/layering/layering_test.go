// Package layering tests the module's dependency rule with the go tool itself, over every
// package of the module; README.md carries the map, written from this file's tables
// (TestMapDocumented). The map, from the top:
//
//	cmd → run (each command's work) → (the system registry) → bench → {planner, sim, serve, export} →
//	{dataplane, solver, profiler} → formats
//
// A package imports only packages of a lower layer or of its own group: planner and sim never
// import each other (nor serve, nor export); the data plane, the solver and the profiler
// never import one another, so the data plane stands on formats alone (DESIGN.md: "data plane
// → formats"); nothing imports cmd. Where the ranks alone would let more in, importedBy says
// who may import a package: nothing imports bench but cmd and the registry's system packages,
// each of which lists its system's bench (DESIGN.md "Systems as plug-ins"), and those import
// no more than their bench's own package: the contract they share is the leaf
// internal/onformats/benchapi. The few edges that break the ranks and are right are in
// because, each with its reason. Every package must be placed in a layer: a new top-level
// package, or a new one under internal/, fails the test until it is added to layers. Under
// internal/ the folders show the ranks (folders_test.go, internal/README.md). Checking
// direct imports is enough: when every edge points down, so does every path.
//
// Inside serve the packages are ordered too (a layer's level), so that what changes together
// stays together and dependencies point one way:
//
//	front ends (kservegrpc, openai, workflow, autopilot) → load → serve (the driver and the KServe HTTP
//	front end) → worker (emulated, onnx, remote) → {kserve (the v2 wire shapes), internal}
//
// A package imports only a lower level of its group; two packages of one level never import
// each other (the front ends are independent of one another).
package layering

import (
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/plan-dev/plan/"

// layer places the packages under a path prefix: a higher rank may import a lower one;
// within one rank only the same group. level orders the packages of a group that has levels
// (0: the group has none): a higher level may import a lower one, one level never another
// prefix of the same level.
type layer struct {
	prefix string
	rank   int
	group  string
	level  int
}

// layers from the top. The longest matching prefix wins.
var layers = []layer{
	{"cmd", 8, "cmd", 0},
	// Each command's work, without cobra: one package per command with Run(ctx, args, io),
	// over the registry and everything below it (run holds what they share).
	{"internal/run", 7, "run", 0},
	// The registry wires every system's parts (planner, deployer, policies, benches,
	// exporters, front ends) for cmd; the conformance harness runs the registry's policies
	// in the simulator.
	{"internal/registry", 6, "registry", 0},
	{"bench", 5, "bench", 0},
	{"planner", 4, "planner", 0},
	{"sim", 4, "sim", 0},
	// serve's levels, from the top: the front ends on Server.Submit, the load generator
	// (kservegrpc's client builds on it), the driver, the workers, the wire shapes.
	{"serve/kservegrpc", 4, "serve", 5},
	{"serve/openai", 4, "serve", 5},
	{"serve/workflow", 4, "serve", 5},
	{"serve/autopilot", 4, "serve", 5},
	{"serve/load", 4, "serve", 4},
	{"serve", 4, "serve", 3},
	{"serve/worker", 4, "serve", 2},
	{"serve/kserve", 4, "serve", 1},
	{"serve/internal", 4, "serve", 1},
	{"internal/fixture/servetest", 4, "serve", 0},
	{"export", 4, "export", 0},
	// tinycascade builds small ONNX cascades (with the profiler's graph) for serve's tests.
	{"internal/fixture/tinycascade", 4, "tinycascade", 0},
	// The data plane, the solver and the profiler are one rank in three groups: none imports
	// another (the data plane reads profiles, the format, never the profiler that makes
	// them), save the exception in because.
	{"dataplane", 3, "dataplane", 0},
	// policytest drives an engine by hand for the policies' unit tests.
	{"internal/fixture/policytest", 3, "dataplane", 0},
	{"solver", 3, "solver", 0},
	{"profiler", 3, "profiler", 0},
	// The embedded demo inputs are data: anything above formats may embed them.
	{"internal/onformats/demo", 1, "demo", 0},
	// benchapi is the contract of a `plan bench` subcommand (Bench, Env, ReportReader): a
	// leaf above formats, so the registry lists benches and `plan validate` reads their
	// reports without importing bench.
	{"internal/onformats/benchapi", 1, "benchapi", 0},
	// Each system's sections (validation and cross-file checks of its typed plan and workload
	// sections): above formats' shared types, below everything that reads files, so the
	// registry (and tests) hand them to formats as a SectionSet.
	{"formats/sections", 0, "formats", 0},
	// The LLM vocabulary (classes, token profiles, SLO percentiles, instance roles, the
	// workload's llm_classes): shared by the engine, the simulator, the deployment search,
	// serve and QLM's plan section, so it sits beside formats' shared types, under all of them.
	{"formats/llmspec", 0, "formats", 0},
	{"formats", 0, "formats", 0},
	// gpucat is the one GPU catalogue (memory, rates, links, price, labels, kernel tables):
	// a leaf beside formats' shared types, which validates clusters and prices from it.
	{"internal/base/gpucat", 0, "formats", 0},
	// Dependency-free helpers and test-only packages.
	{"internal/base/simbench", 0, "simbench", 0},
	// tables: the note under a table that says why some cells are "-", for the commands and
	// the benches alike.
	{"internal/base/tables", 0, "tables", 0},
	// progress decides, in one place, whether stderr is a terminal (progress lines or none).
	{"internal/base/progress", 0, "progress", 0},
	{"internal/base/readme", 0, "readme", 0},
	// testmode decides, in one place, whether heavy test cases run (make test-full).
	{"internal/base/testmode", 0, "testmode", 0},
	// goldencases lists the golden plans and the solve arguments that write each.
	{"internal/base/goldencases", 0, "goldencases", 0},
	// promcheck lints Prometheus expositions (promtool's rules) for serve's and cmd's tests.
	{"internal/base/promcheck", 0, "promcheck", 0},
	// gammarand is the one Gamma sampler (bursty arrivals, datasets, regenerated sends).
	{"internal/base/gammarand", 0, "gammarand", 0},
	// quantile is the one percentile definition (numpy's linear), for every report.
	{"internal/base/quantile", 0, "quantile", 0},
	// optflag binds a typed options struct to flags (the planners' options).
	{"internal/base/optflag", 0, "optflag", 0},
	{"internal/layering", 0, "layering", 0},
	// buildinfo is the binary's stamped version, for plan version and the servers.
	{"internal/base/buildinfo", 0, "buildinfo", 0},
}

// allowed are the known violations on main, each "from → to" with the issue that removes it.
// The list only shrinks: an entry that no longer occurs fails the test too, so it is deleted
// as the fix lands.
var allowed = map[string]string{}

// because are the edges that break the ranks and are right, each with its reason: from (a
// package and those under it) may import to (likewise). DESIGN.md's map should say each.
var because = []struct {
	from, to, why string
}{
	// QLM's plan generator (QLM §7) re-plans the virtual queues online with an MILP, inside
	// its policy, deterministically and within a time budget: the solve is the policy's
	// decision, made as events arrive, so it cannot move up to the planner. Only QLM's data
	// plane solves; the engine core and every other system's policies do not.
	{"dataplane/qlm", "solver", "QLM's policy re-plans online (QLM §7)"},
}

// importRule says who may import a package where the ranks alone would let more in: to is a
// package, with "/*" every package under it (not itself), with "/..." it and every package
// under it; from lists the only packages
// (and those under them) outside to's group that may import it.
type importRule struct {
	to   string
	from []string
	why  string
}

// importedBy are the import rules: the shared ones, then each system's (systemRules).
var importedBy = append([]importRule{
	// DESIGN.md: nothing imports bench. cmd runs the benches (plan bench); the contract the
	// registry and plan validate need is internal/onformats/benchapi.
	{"bench", []string{"cmd"}, "nothing but cmd imports bench (the contract is internal/onformats/benchapi)"},
	// A system's benches are among the parts the registry lists (DESIGN.md "Systems as
	// plug-ins"), so a system package imports its own bench package to construct it; no other
	// registry package, and nothing under the registry, names a bench.
	{"bench/*", []string{"cmd", "internal/registry/systems"}, "only cmd and the registry's system packages import a bench"},
	// The LLM vocabulary (classes, token profiles, roles, llm_classes) is formats/llmspec, which
	// belongs to no system; qlmsec is QLM's plan section alone. QLM's own packages read it, as
	// does the deployment search, which writes its result as a QLM plan. plan simulate's exact
	// replay asks the plan which models it serves (formats.Plan.ServedModels) instead.
	{"formats/sections/qlmsec", []string{"dataplane/qlm", "planner/qlm", "export/qlm", "internal/registry/systems/qlmsys",
		"planner/llmdeploy"}, "qlmsec is QLM's plan section: the LLM vocabulary is formats/llmspec"},
}, systemRules()...)

// systemPackages are each in-tree system's own packages outside the registry: its planner,
// data plane, exporters and bench, and its serve front end where it has one.
var systemPackages = []struct {
	name string
	own  []string
}{
	{"ppipe", []string{"planner/ppipe", "dataplane/ppipe", "export/ppipe", "bench/ppipebench"}},
	{"pard", []string{"planner/pard", "dataplane/pard", "export/pard", "bench/pardbench"}},
	{"cascade", []string{"planner/cascade", "dataplane/cascade", "export/cascade", "bench/cascadebench"}},
	{"qlm", []string{"planner/qlm", "dataplane/qlm", "export/qlm", "bench/qlmbench", "serve/openai"}},
	{"dyorc", []string{"planner/dyorc", "dataplane/dyorc", "export/dyorc", "bench/dyorcbench", "serve/workflow"}},
}

// sharedImporters are the shared packages that name a system's package directly rather than
// through the registry, per system package, each with its reason; the list only shrinks.
var sharedImporters = map[string]struct {
	from []string
	why  string
}{
	"formats/sections/ppipesec": {[]string{"dataplane/workload", "export", "serve/load", "internal/fixture/servetest"},
		"plan workload --from-trace writes a DNN trace as PPipe's models; the placement exporter scales PPipe's pipelines by their capacity; the HTTP floor mimics a PPipe plan; servetest builds PPipe plans for serve's tests"},
	"formats/sections/pardsec":    {[]string{"internal/onformats/demo", "internal/fixture/servetest"}, "the demo and serve's test fixtures build PARD plans"},
	"formats/sections/cascadesec": {[]string{"internal/run/importval", "internal/run/validate", "internal/fixture/tinycascade"}, "plan import validation and plan validate read CascadeServe's validation-records files (a file kind of its own); tinycascade is a test fixture"},
	"formats/sections/dyorcsec":   {[]string{"sim/simscale"}, "the simulator's scale bench builds DyOrc workflows"},
	"dataplane/*":                 {[]string{"bench/speedbench", "sim/simscale", "internal/fixture/servetest"}, "plan bench speed and the scale bench time each system's data plane; servetest deploys PPipe and PARD plans"},
	"planner/ppipe":               {[]string{"internal/run/corpus"}, "plan bench ppipe-corpus solves generated PPipe cases as plan solve does"},
}

// systemRules are the import rules of the systems' packages: a system's section, data
// plane, planner and exporters are imported by its own packages and the registry
// (internal/registry/systems), and by the shared packages sharedImporters names with their reason;
// no other shared package names a system's package (DESIGN.md "Systems as plug-ins").
func systemRules() []importRule {
	var out []importRule
	for _, s := range systemPackages {
		for _, to := range []string{"formats/sections/" + s.name + "sec", "dataplane/" + s.name, "planner/" + s.name, "export/" + s.name} {
			if to == "formats/sections/qlmsec" {
				continue // its own rule above
			}
			from := append([]string{"internal/registry/systems"}, s.own...)
			why := "a system's package is imported by its own packages and the registry"
			for key, sh := range sharedImporters {
				if key == to || (strings.HasSuffix(key, "/*") && strings.HasPrefix(to, strings.TrimSuffix(key, "*"))) {
					from = append(from, sh.from...)
					why += "; " + sh.why
				}
			}
			out = append(out, importRule{to + "/...", from, why})
		}
	}
	return out
}

// under reports whether pkg is prefix or a package under it.
func under(pkg, prefix string) bool { return pkg == prefix || strings.HasPrefix(pkg, prefix+"/") }

// exempt reports whether the edge from → to is one of because.
func exempt(from, to string) bool {
	for _, b := range because {
		if under(from, b.from) && under(to, b.to) {
			return true
		}
	}
	return false
}

// importersOf returns the importedBy entry that limits who imports to, if any.
func importersOf(to string) (from []string, why string, ok bool) {
	for _, e := range importedBy {
		if tree, ok := strings.CutSuffix(e.to, "/..."); ok && under(to, tree) {
			return e.from, e.why, true
		}
		if base, sub := strings.CutSuffix(e.to, "/*"); (sub && strings.HasPrefix(to, base+"/")) || (!sub && to == e.to) {
			return e.from, e.why, true
		}
	}
	return nil, "", false
}

func place(pkg string) (layer, bool) {
	best, ok := layer{}, false
	for _, l := range layers {
		if (pkg == l.prefix || strings.HasPrefix(pkg, l.prefix+"/")) && len(l.prefix) > len(best.prefix) {
			best, ok = l, true
		}
	}
	return best, ok
}

// imports lists every package of the module with its direct (non-test) imports inside the
// module, both relative to the module path.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], module) {
			continue
		}
		from := strings.TrimPrefix(f[0], module)
		m[from] = nil
		for _, to := range f[1:] {
			if strings.HasPrefix(to, module) {
				m[from] = append(m[from], strings.TrimPrefix(to, module))
			}
		}
	}
	return m
}

// violations returns every import that breaks the rule, as "from → to: why", and the
// packages no layer places.
func violations(m map[string][]string) (bad []string, unplaced []string) {
	for from, tos := range m {
		lf, ok := place(from)
		if !ok {
			unplaced = append(unplaced, from)
			continue
		}
		for _, to := range tos {
			lt, ok := place(to)
			if !ok {
				continue // reported as unplaced from its own entry
			}
			switch {
			case exempt(from, to):
			case lt.rank > lf.rank:
				bad = append(bad, fmt.Sprintf("%s → %s: %s imports a higher layer (%s)", from, to, lf.group, lt.group))
			case lt.rank == lf.rank && lt.group != lf.group:
				bad = append(bad, fmt.Sprintf("%s → %s: %s and %s never import each other", from, to, lf.group, lt.group))
			case lt.group == lf.group && lf.level > 0 && lt.level > lf.level:
				bad = append(bad, fmt.Sprintf("%s → %s: %s imports a higher level of %s (%s)", from, to, lf.prefix, lf.group, lt.prefix))
			case lt.group == lf.group && lf.level > 0 && lt.level == lf.level && lt.prefix != lf.prefix:
				bad = append(bad, fmt.Sprintf("%s → %s: %s and %s never import each other", from, to, lf.prefix, lt.prefix))
			}
			if importers, why, limited := importersOf(to); limited && lt.group != lf.group &&
				!slices.ContainsFunc(importers, func(p string) bool { return under(from, p) }) {
				bad = append(bad, fmt.Sprintf("%s → %s: %s", from, to, why))
			}
		}
	}
	sort.Strings(bad)
	sort.Strings(unplaced)
	return bad, unplaced
}

func TestLayering(t *testing.T) {
	m := imports(t)
	// The test must look at every top-level package, or it passes with nothing checked.
	for _, top := range []string{"cmd", "bench", "planner", "sim", "serve", "export", "dataplane", "formats", "solver", "profiler", "internal"} {
		found := false
		for pkg := range m {
			found = found || pkg == top || strings.HasPrefix(pkg, top+"/")
		}
		if !found {
			t.Errorf("go list found no package under %s/", top)
		}
	}
	bad, unplaced := violations(m)
	for _, p := range unplaced {
		t.Errorf("package %s is in no layer: add it to layers", p)
	}
	seen := map[string]bool{}
	for _, v := range bad {
		edge := v[:strings.Index(v, ":")]
		if _, ok := allowed[edge]; ok {
			seen[edge] = true
			continue
		}
		t.Error(v)
	}
	for edge, why := range allowed {
		if !seen[edge] {
			t.Errorf("allowed violation %q (%s) no longer occurs: delete it from allowed", edge, why)
		}
	}
	// A shared importer of a system's package that no longer imports it would let the edge
	// back in unseen: the list only shrinks.
	for key, sh := range sharedImporters {
		for _, imp := range sh.from {
			found := false
			for from, tos := range m {
				found = found || (under(from, imp) && slices.ContainsFunc(tos, func(to string) bool {
					base, sub := strings.CutSuffix(key, "/*")
					return (sub && strings.HasPrefix(to, base+"/")) || under(to, key)
				}))
			}
			if !found {
				t.Errorf("shared importer %s of %s no longer imports it: delete it from sharedImporters", imp, key)
			}
		}
	}
	// An exception that no longer occurs would let the edge back in unseen.
	for _, b := range because {
		found := false
		for from, tos := range m {
			found = found || (under(from, b.from) && slices.ContainsFunc(tos, func(to string) bool { return under(to, b.to) }))
		}
		if !found {
			t.Errorf("exception %s → %s (%s) no longer occurs: delete it from because", b.from, b.to, b.why)
		}
	}
}

// intreeHelpers are the test-helper packages (non-test files, imported by tests only) that
// may import formats/sections/intree besides _test.go files.
var intreeHelpers = []string{"export/exporttest"}

// TestInTreeSectionsOnlyInTests: the system registry (internal/registry/systems) is the one source of
// the systems' sections in production (DESIGN.md "Systems as plug-ins"); packages below it
// take the registry's set from their callers. formats/sections/intree, the same sections as a
// fixed value, is a test helper: no package but a test helper imports it, so no production
// path can fall back to it (as serve's PUT /v1/plan and plan load once did).
func TestInTreeSectionsOnlyInTests(t *testing.T) {
	const intree = "formats/sections/intree"
	for from, tos := range imports(t) {
		if slices.Contains(tos, intree) && !slices.Contains(intreeHelpers, from) {
			t.Errorf("%s imports %s: take the registry's sections from the caller (internal/registry/systems Registry.Sections)", from, intree)
		}
	}
}

// TestRuleCatches checks the rule on made-up import graphs, so a rule that accepts
// everything fails here.
func TestRuleCatches(t *testing.T) {
	for _, c := range []struct {
		from, to string
		want     bool
	}{
		{"planner/ppipe", "sim", true},
		{"sim", "planner/pard", true},
		{"serve/load", "sim", true},
		{"dataplane/qlm", "planner/qlm", true},
		{"formats", "solver", true},
		{"formats", "dataplane", true},
		{"planner/pard", "bench/pardbench", true},
		{"serve", "cmd/plan/internal/cli", true},
		{"bench/ppipebench", "internal/registry/systems", true},
		{"export/ppipe", "planner/ppipe", true},
		{"dataplane", "solver", true},
		{"dataplane/llm", "solver", true},
		{"dataplane/pard", "solver", true},
		{"dataplane/llm", "profiler/llm/pwlcurve", true},
		{"dataplane/qlm", "profiler/llm", true},
		{"internal/fixture/policytest", "profiler", true},
		{"solver", "profiler", true},
		{"profiler", "solver", true},
		{"solver", "dataplane", true},
		{"profiler/llm", "dataplane/llm", true},
		{"planner/qlm", "solver", false},
		{"planner/qlm", "profiler/llm", false},
		{"internal/fixture/tinycascade", "profiler/onnx", false},
		{"internal/run", "bench", true},
		{"internal/run/validate", "bench", true},
		{"internal/run/validate", "bench/qlmbench", true},
		{"internal/registry/system", "bench", true},
		{"internal/registry/systems/qlmsys", "bench", true},
		{"internal/registry/conformance", "bench/qlmbench", true},
		{"internal/registry/systems/qlmsys", "bench/qlmbench", false},
		{"internal/registry/systems/qlmsys", "internal/onformats/benchapi", false},
		{"internal/run/validate", "internal/onformats/benchapi", false},
		{"bench/qlmbench", "internal/onformats/benchapi", false},
		{"bench/qlmbench", "bench", false},
		{"internal/run", "internal/base/tables", false},
		{"bench/qlmbench", "internal/base/tables", false},
		{"internal/onformats/benchapi", "bench", true},
		{"cmd/plan/internal/cli", "bench/solverbench", false},
		{"sim", "formats/sections/qlmsec", true},
		{"dataplane/llm", "formats/sections/qlmsec", true},
		{"planner/autopilot", "formats/sections/qlmsec", true},
		{"serve/load", "formats/sections/qlmsec", true},
		{"planner/llmdeploy", "formats/sections/qlmsec", false},
		{"dataplane/qlm", "formats/sections/qlmsec", false},
		{"formats/sections/intree", "formats/sections/qlmsec", false},
		{"sim", "formats/llmspec", false},
		// A system's packages behind the registry (systemRules).
		{"sim", "dataplane/ppipe", true},
		{"internal/run/check", "formats/sections/pardsec", true},
		{"planner/autopilot", "formats/sections/ppipesec", true},
		{"internal/run/simulate", "formats/sections/qlmsec", true},
		{"export/cascade", "planner/pard", true},
		{"internal/run/corpus", "planner/ppipe/corpus", false},
		{"internal/run/importval", "formats/sections/cascadesec", false},
		{"internal/registry/systems/dyorcsys", "dataplane/dyorc", false},
		{"serve/workflow", "dataplane/dyorc", false},
		{"bench/speedbench", "dataplane/qlm", false},
		{"planner/pard", "dataplane/pard", false},
		{"cmd/plan/internal/cli", "bench", false},
		{"internal/registry/systems/ppipesys", "bench/ppipebench", false},
		{"bench/pardbench", "sim", false},
		{"planner/qlm", "dataplane/qlm", false},
		{"dataplane/qlm", "solver", false},
		{"profiler/onnx", "formats", false},
		{"serve/load", "serve", false},
		{"serve", "serve/load", true},
		{"serve", "serve/openai", true},
		{"serve/worker", "serve", true},
		{"serve/kserve", "serve/worker", true},
		{"serve/openai", "serve/kservegrpc", true},
		{"serve", "serve/autopilot", true},
		{"serve/autopilot", "serve", false},
		{"serve/openai", "serve", false},
		{"serve/kservegrpc", "serve/load", false},
		{"serve", "serve/worker", false},
		{"serve/worker", "serve/kserve", false},
		{"serve/kservegrpc/inferencepb", "serve/kservegrpc", false},
	} {
		bad, unplaced := violations(map[string][]string{c.from: {c.to}, c.to: nil})
		if len(unplaced) > 0 {
			t.Errorf("%s → %s: unplaced %v", c.from, c.to, unplaced)
		}
		if got := len(bad) > 0; got != c.want {
			t.Errorf("%s → %s: violation %v, want %v (%v)", c.from, c.to, got, c.want, bad)
		}
	}
	if _, unplaced := violations(map[string][]string{"newtop": nil}); !slices.Equal(unplaced, []string{"newtop"}) {
		t.Errorf("a package in no layer passes: %v", unplaced)
	}
}
