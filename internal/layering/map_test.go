package layering

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite internal/layering/README.md's map from the test's tables")

// mapBegin and mapEnd enclose the part of README.md that renderMap writes.
const (
	mapBegin = "<!-- map: written by `go test ./internal/layering -run TestMapDocumented -update` -->"
	mapEnd   = "<!-- end of map -->"
)

// renderMap writes the layer map the test enforces, as Markdown: the ranks from the top
// with their groups and prefixes, serve's levels, who may import the limited packages, and
// the exceptions with their reasons. README.md carries it, so the map a newcomer reads and
// the map the test checks are one.
func renderMap() string {
	var b strings.Builder
	ranks := map[int][]layer{}
	for _, l := range layers {
		ranks[l.rank] = append(ranks[l.rank], l)
	}
	var order []int
	for r := range ranks {
		order = append(order, r)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(order)))
	b.WriteString("| rank | group | packages (path prefixes) |\n|---:|---|---|\n")
	for _, r := range order {
		groups := map[string][]string{}
		var names []string
		for _, l := range ranks[r] {
			if _, ok := groups[l.group]; !ok {
				names = append(names, l.group)
			}
			groups[l.group] = append(groups[l.group], "`"+l.prefix+"`")
		}
		for _, g := range names {
			fmt.Fprintf(&b, "| %d | %s | %s |\n", r, g, strings.Join(groups[g], ", "))
		}
	}
	b.WriteString("\nA package imports only a lower rank, or its own group at its own rank.\n")
	b.WriteString("\nserve's levels (a package imports only a lower level of serve; one level's packages never import each other):\n\n")
	levels := map[int][]string{}
	var lv []int
	for _, l := range layers {
		if l.group == "serve" && l.level > 0 {
			if _, ok := levels[l.level]; !ok {
				lv = append(lv, l.level)
			}
			levels[l.level] = append(levels[l.level], "`"+l.prefix+"`")
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(lv)))
	for _, v := range lv {
		fmt.Fprintf(&b, "- level %d: %s\n", v, strings.Join(levels[v], ", "))
	}
	b.WriteString("\nWho may import a package, where the ranks alone would let more in:\n\n")
	for _, e := range importedBy {
		from := make([]string, len(e.from))
		for i, f := range e.from {
			from[i] = "`" + f + "`"
		}
		fmt.Fprintf(&b, "- `%s`: only %s; %s\n", e.to, strings.Join(from, ", "), e.why)
	}
	b.WriteString("\nEdges that break the ranks, each with its reason:\n\n")
	for _, e := range because {
		fmt.Fprintf(&b, "- `%s` → `%s`: %s\n", e.from, e.to, e.why)
	}
	return b.String()
}

// TestMapDocumented: README.md's map is the one the test enforces (rewrite it with -update
// after changing layers, importedBy or because).
func TestMapDocumented(t *testing.T) {
	const path = "README.md"
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(src)
	i, j := strings.Index(doc, mapBegin), strings.Index(doc, mapEnd)
	if i < 0 || j < i {
		t.Fatalf("%s: no map between %q and %q", path, mapBegin, mapEnd)
	}
	want := doc[:i+len(mapBegin)] + "\n" + renderMap() + doc[j:]
	if want == doc {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's map differs from the test's tables: run go test ./internal/layering -run TestMapDocumented -update", path)
}
