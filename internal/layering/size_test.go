package layering

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The size limits of production code (DESIGN.md's standards): a file one person can hold in
// mind, a function one can read in one sitting.
const (
	maxFileLines = 800
	maxFuncLines = 150
)

// oversized are the production files and functions still over the limits, each a TODO that
// is deleted when its split lands: the test fails for any offender not listed here and for
// any entry that is no longer over its limit, so the list only shrinks. Files are paths from
// the repository root; functions are "path:Name" or "path:Recv.Name".
var oversized = map[string]string{}

// sourceFile reports whether a path is production Go source the limits apply to: not a
// test, not generated protobuf code, not vendored or fixture code.
func sourceFile(rel string) bool {
	return strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go") && !strings.HasSuffix(rel, ".pb.go")
}

// walkSources calls fn with every production source file under root (slash path relative to
// root, and its text), skipping fixtures, vendored code, hidden folders and bin.
func walkSources(root string, fn func(rel, path string, src []byte) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (name == "testdata" || name == "third_party" || strings.HasPrefix(name, ".") || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !sourceFile(rel) {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return fn(rel, path, src)
	})
}

// measure returns every file over maxFileLines and every function over maxFuncLines under
// root, keyed as in oversized, with their lengths.
func measure(root string) (map[string]int, int, error) {
	over := map[string]int{}
	files := 0
	fset := token.NewFileSet()
	err := walkSources(root, func(rel, path string, src []byte) error {
		files++
		if n := strings.Count(string(src), "\n"); n > maxFileLines {
			over[rel] = n
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("%s: %v", rel, err)
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			if n > maxFuncLines {
				over[rel+":"+funcName(fd)] = n
			}
		}
		return nil
	})
	return over, files, err
}

func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fd.Name.Name
		}
		return fd.Name.Name
	}
}

func TestSize(t *testing.T) {
	over, files, err := measure("../..")
	if err != nil {
		t.Fatal(err)
	}
	// Walking the wrong folder would pass with nothing measured.
	if files < 100 {
		t.Fatalf("measured only %d production files: wrong root?", files)
	}
	var keys []string
	for k := range over {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, ok := oversized[k]; ok {
			continue
		}
		if strings.Contains(k, ":") {
			t.Errorf("function %s is %d lines (limit %d): split it", k, over[k], maxFuncLines)
		} else {
			t.Errorf("file %s is %d lines (limit %d): split it", k, over[k], maxFileLines)
		}
	}
	for k := range oversized {
		if _, ok := over[k]; !ok {
			t.Errorf("%s is within the limits now: delete it from oversized", k)
		}
	}
}

// TestMeasureCatches runs measure on a fixture with one file and one function over the
// limits, so a measure that finds nothing fails here.
func TestMeasureCatches(t *testing.T) {
	dir := t.TempDir()
	long := "package p\n\nfunc Long() {\n" + strings.Repeat("\t_ = 1\n", maxFuncLines) + "}\n\ntype T struct{}\n\nfunc (*T) Short() {}\n"
	big := "package p\n" + strings.Repeat("\n", maxFileLines)
	for name, src := range map[string]string{"long.go": long, "big.go": big, "big_test.go": big, "x.pb.go": big} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	over, files, err := measure(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"long.go:Long": maxFuncLines + 2, "big.go": maxFileLines + 1}
	if files != 2 || len(over) != len(want) {
		t.Fatalf("measured %d files, over %v; want 2 files, %v", files, over, want)
	}
	for k, n := range want {
		if over[k] != n {
			t.Errorf("%s: %d lines, want %d", k, over[k], n)
		}
	}
}
