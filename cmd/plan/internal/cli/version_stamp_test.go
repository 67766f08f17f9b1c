package cli

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/internal/base/buildinfo"
)

// TestVersionStamp: the version and commit the Makefile stamps through -ldflags -X are what
// `plan version` prints, in place of "(devel)" and "-" of a -buildvcs=false build.
func TestVersionStamp(t *testing.T) {
	defer buildinfo.SetStamp("v1.2.3-4-gabcdef0-dirty", "abcdef0123456789")()
	code, out, errs := runCLI(t, "version")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, w := range []string{"v1.2.3-4-gabcdef0-dirty", "abcdef0123456789 (modified)"} {
		if !strings.Contains(out, w) {
			t.Errorf("plan version lacks %q:\n%s", w, out)
		}
	}
	if got := ToolVersion(); got != "v1.2.3-4-gabcdef0-dirty+abcdef012345" {
		t.Errorf("ToolVersion() = %q", got)
	}
}

// TestMakefileStampsAndInstalls: `make -n` (prints, runs nothing) shows the build stamping
// the variables internal/base/buildinfo declares and `make install` placing the binary in PREFIX/bin and
// ONNX Runtime in PREFIX/lib/plan, where profiler/measure looks.
func TestMakefileStampsAndInstalls(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	root := filepath.Join("..", "..", "..", "..")
	cmd := exec.Command("make", "-n", "-C", root, "install", "NATIVE=0", "PREFIX=/opt/p", "VERSION=v9.9.9", "COMMIT=c0ffee")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n install: %v\n%s", err, out)
	}
	for _, w := range []string{
		"-X github.com/plan-dev/plan/internal/base/buildinfo.stampVersion=v9.9.9",
		"-X github.com/plan-dev/plan/internal/base/buildinfo.stampCommit=c0ffee",
		"install -m 0755 bin/plan /opt/p/bin/plan",
		"/opt/p/lib/plan/libonnxruntime.so",
	} {
		if !strings.Contains(string(out), w) {
			t.Errorf("make -n install lacks %q:\n%s", w, out)
		}
	}
}
