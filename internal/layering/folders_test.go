package layering

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
)

// folders are internal/'s folders, each with the ranks its packages hold in layers, so the
// tree shows the map: internal/README.md says what each holds. fixture is the one folder
// of several ranks (each fixture sits at the rank of what it builds); its packages are
// imported by tests only.
var folders = []folder{
	{"internal/run", []int{7}},
	{"internal/registry", []int{6}},
	{"internal/fixture", []int{3, 4}},
	{"internal/onformats", []int{1}},
	{"internal/base", []int{0}},
	{"internal/layering", []int{0}},
}

// folder is a folder of internal/ and the ranks of its packages.
type folder struct {
	dir   string
	ranks []int
}

// fixtures is the folder whose packages no production package imports.
const fixtures = "internal/fixture"

// folderViolations returns, for the module's packages and their direct (non-test) imports,
// each package under internal/ that is in no folder or at a rank its folder does not show,
// and each production import of a fixture. place is the layer map (packages it does not
// place are TestLayering's to report).
func folderViolations(m map[string][]string, place func(string) (layer, bool)) []string {
	var bad []string
	for pkg, tos := range m {
		for _, to := range tos {
			if under(to, fixtures) && !under(pkg, fixtures) {
				bad = append(bad, fmt.Sprintf("%s imports the test fixture %s: fixtures are for tests", pkg, to))
			}
		}
		if !under(pkg, "internal") {
			continue
		}
		i := slices.IndexFunc(folders, func(f folder) bool { return under(pkg, f.dir) })
		if i < 0 {
			bad = append(bad, fmt.Sprintf("%s is in no folder of internal/README.md: put it in the folder of its rank", pkg))
			continue
		}
		if l, ok := place(pkg); ok && !slices.Contains(folders[i].ranks, l.rank) {
			bad = append(bad, fmt.Sprintf("%s has rank %d, but %s/ holds ranks %v", pkg, l.rank, folders[i].dir, folders[i].ranks))
		}
	}
	sort.Strings(bad)
	return bad
}

// TestFoldersShowRanks: every package under internal/ sits in the folder of its rank, and
// internal/README.md names every folder.
func TestFoldersShowRanks(t *testing.T) {
	for _, v := range folderViolations(imports(t), place) {
		t.Error(v)
	}
	doc, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range folders {
		name := "`" + strings.TrimPrefix(f.dir, "internal/") + "/`"
		if !strings.Contains(string(doc), name) {
			t.Errorf("internal/README.md does not name %s", name)
		}
		if _, err := os.Stat("../../" + f.dir); err != nil {
			t.Errorf("folder %s: %v", f.dir, err)
		}
	}
}

// TestFolderRuleCatches checks the folder rule on made-up packages and a made-up map, so a
// rule that accepts everything fails here.
func TestFolderRuleCatches(t *testing.T) {
	ranks := map[string]int{"internal/base/leaf": 0, "internal/registry/x": 6, "internal/base/climbs": 1,
		"internal/fixture/deep": 5, "internal/fixture/a": 3, "internal/fixture/b": 4, "serve": 4}
	fake := func(pkg string) (layer, bool) {
		r, ok := ranks[pkg]
		return layer{pkg, r, pkg, 0}, ok
	}
	for _, c := range []struct {
		m    map[string][]string
		want int
	}{
		{map[string][]string{"internal/base/leaf": nil, "internal/registry/x": {"internal/base/leaf"}}, 0},
		{map[string][]string{"internal/loose": nil}, 1},
		{map[string][]string{"internal/base/climbs": nil}, 1},
		{map[string][]string{"internal/fixture/deep": nil}, 1},
		{map[string][]string{"serve": {"internal/fixture/servetest"}}, 1},
		{map[string][]string{"internal/fixture/a": {"internal/fixture/b"}}, 0},
	} {
		if got := folderViolations(c.m, fake); len(got) != c.want {
			t.Errorf("%v: %d violations %v, want %d", c.m, len(got), got, c.want)
		}
	}
}
