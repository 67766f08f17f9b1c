package layering

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The extension points hold: a sixth system (internal/registry/systems/toysys) and a toy LLM
// scheduling policy are new code plus one registry line each, so the only files outside the
// toy's own package that name them are the tests that register them. In particular no
// production file — formats, the registry, the commands — knows the toy system, and formats
// names no system's section at all.
func TestToyExtensionsTouchOnlyTheirFiles(t *testing.T) {
	for _, tc := range []struct {
		name, needle, own string
		want              []string
	}{
		{"sixth system", `"github.com/plan-dev/plan/internal/registry/systems/toysys"`, "internal/registry/systems/toysys/", []string{
			"cmd/plan/internal/cli/help_test.go",
			"cmd/plan/internal/cli/toysys_test.go",
			"internal/registry/systems/systems_test.go",
		}},
		{"LLM scheduling policy", "shortestFirst", "", []string{
			"dataplane/llm/sched/registry_test.go",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := slices.DeleteFunc(filesNaming(t, "../..", tc.needle, tc.own), func(f string) bool {
				return f == "internal/layering/toy_test.go" // this test names them to look for them
			})
			if !slices.Equal(got, tc.want) {
				t.Errorf("files naming %s outside %q:\n\t%s\nwant\n\t%s", tc.needle, tc.own, strings.Join(got, "\n\t"), strings.Join(tc.want, "\n\t"))
			}
		})
	}
	// formats' own files name none of the in-tree systems' section types or keys. The LLM
	// vocabulary (formats/llmspec) declares LLMClass on purpose: the llm_classes section is
	// every LLM part's, no one system's, though QLM's registers it.
	for _, f := range filesNaming(t, "../../formats", "", "sections/") {
		if strings.HasPrefix(f, "llmspec/") {
			continue
		}
		src, err := os.ReadFile(filepath.Join("../../formats", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, typ := range []string{"PPipePlan", "PARDPlan", "CascadePlan", "QLMPlan", "DyOrcPlan", "ModelWorkload", "LLMClass", "Workflows"} {
			if strings.HasSuffix(f, ".go") && !strings.HasSuffix(f, "_test.go") && strings.Contains(string(src), "type "+typ+" ") {
				t.Errorf("formats/%s declares %s: a system's section type belongs in its formats/sections package", f, typ)
			}
		}
	}
}

// filesNaming lists the Go files under root (slash paths relative to it, sorted) whose text
// contains needle ("" = every file), leaving out those under the prefix own.
func filesNaming(t *testing.T, root, needle, own string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (d.Name() == "third_party" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || (own != "" && strings.HasPrefix(rel, own)) {
			return nil
		}
		if needle != "" {
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if !strings.Contains(string(src), needle) {
				return nil
			}
		}
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}
