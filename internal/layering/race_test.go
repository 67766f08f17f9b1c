package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// raceExempt are the packages that start goroutines but whose tests run without -race, each
// with where their concurrency is checked instead.
var raceExempt = map[string]string{
	// The command package is mostly single-threaded planning and simulation (14 minutes of
	// tests under -race); its tests that start a server run under -race (CLI_RACE).
	"cmd/plan/internal/cli": "CLI_RACE in scripts/unit-tests.sh",
}

// TestRaceGroupCoversConcurrency keeps scripts/unit-tests.sh's race group honest: every
// package whose production code has a go statement is in RACE_PKGS (or exempt above, with the
// reason), so that a new concurrent package cannot escape the race detector because the split
// was written before it existed.
func TestRaceGroupCoversConcurrency(t *testing.T) {
	script, err := os.ReadFile(filepath.Join("..", "..", "scripts", "unit-tests.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^RACE_PKGS="([^"]*)"`).FindSubmatch(script)
	if m == nil {
		t.Fatal("scripts/unit-tests.sh: no RACE_PKGS=\"...\" line")
	}
	covered := func(pkg string) bool {
		for _, p := range strings.Fields(string(m[1])) {
			p = strings.TrimPrefix(p, "./")
			if rest, ok := strings.CutSuffix(p, "/..."); ok {
				if pkg == rest || strings.HasPrefix(pkg, rest+"/") {
					return true
				}
			} else if pkg == p {
				return true
			}
		}
		return false
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \" \"}}", "./../../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, "\t", 3)
		if len(f) < 3 {
			continue
		}
		pkg := strings.TrimPrefix(f[0], module)
		var starts []string
		for _, name := range strings.Fields(f[2]) {
			if strings.HasSuffix(name, ".pb.go") {
				continue // generated gRPC code: its goroutines are grpc's, tested there
			}
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, filepath.Join(f[1], name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(file, func(n ast.Node) bool {
				if g, ok := n.(*ast.GoStmt); ok {
					starts = append(starts, fset.Position(g.Pos()).String())
				}
				return true
			})
		}
		checked++
		if len(starts) == 0 || covered(pkg) {
			continue
		}
		if _, ok := raceExempt[pkg]; ok {
			continue
		}
		t.Errorf("%s starts goroutines (%s) but is not in scripts/unit-tests.sh's RACE_PKGS", pkg, starts[0])
	}
	if checked < 50 {
		t.Fatalf("go list named %d packages: the module's packages were not found", checked)
	}
}
