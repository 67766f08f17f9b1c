package readme

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"sync"
	"testing"
)

// The README tests run bin/plan as a user would after `make`. They share one build, made the
// first time a test asks for it, with the build tags this test binary was built with
// (make test's highs_native where the native solver is built): a build per test, with tags of
// its own, cost each test a link and the module's solver-dependent packages a compile of
// their own.
var shared struct {
	once sync.Once
	dir  string
	bin  string
	out  []byte
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// testTags returns the -tags this test binary was built with ("" when none).
func testTags() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-tags" {
				return s.Value
			}
		}
	}
	return ""
}

// installPlan puts a copy of the shared bin/plan at path (built on first use).
func installPlan(t *testing.T, path string) {
	t.Helper()
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "readme-plan-")
		if shared.err != nil {
			return
		}
		shared.bin = filepath.Join(shared.dir, "plan")
		// -ldflags=-w: no DWARF (no debugger runs it), which halves the link.
		cmd := exec.Command("go", "build", "-tags", testTags(), "-ldflags=-w", "-o", shared.bin, "./cmd/plan")
		cmd.Dir = root
		shared.out, shared.err = cmd.CombinedOutput()
	})
	if shared.err != nil {
		t.Fatalf("go build -tags %q ./cmd/plan: %v\n%s", testTags(), shared.err, shared.out)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(shared.bin)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
