package measure

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// LibEnv names the environment variable that points at libonnxruntime.
const LibEnv = "PLAN_ORT_LIB"

// libRel is where `make assets` (scripts/fetch-assets.sh) installs the library.
var libRel = filepath.Join("third_party", "onnxruntime", "libonnxruntime.so")

// ErrNoLibrary is wrapped by every error about a missing or unloadable ONNX Runtime.
var ErrNoLibrary = errors.New("ONNX Runtime library not available")

// ErrDevice is wrapped by errors about a device or execution provider that is not available.
var ErrDevice = errors.New("device not available")

// installRel is where `make install` puts the library, relative to the directory of the
// installed binary (PREFIX/bin/plan → PREFIX/lib/plan/libonnxruntime.so).
var installRel = filepath.Join("..", "lib", "plan", "libonnxruntime.so")

// findLibrary locates libonnxruntime: $PLAN_ORT_LIB, else next to the executable (and
// exe/../third_party/onnxruntime, the layout of `make build`, and exe/../lib/plan, the
// layout of `make install`), else third_party/onnxruntime
// in the working directory or any parent (a checkout; `go test` runs in a package dir).
func findLibrary(env, exe, cwd string) (string, error) {
	if env != "" {
		if st, err := os.Stat(env); err != nil || st.IsDir() {
			return "", fmt.Errorf("%w: %s=%s: no such file; unset it to use the library `make assets` installs in %s", ErrNoLibrary, LibEnv, env, libRel)
		}
		return env, nil
	}
	var tried []string
	try := func(p string) bool {
		tried = append(tried, p)
		st, err := os.Stat(p)
		return err == nil && !st.IsDir()
	}
	if exe != "" {
		dir := filepath.Dir(exe)
		for _, p := range []string{
			filepath.Join(dir, "libonnxruntime.so"),
			filepath.Join(dir, libRel),
			filepath.Join(dir, "..", libRel),
			filepath.Join(dir, installRel),
		} {
			if try(p) {
				return p, nil
			}
		}
	}
	for dir := cwd; dir != ""; {
		if p := filepath.Join(dir, libRel); try(p) {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", fmt.Errorf("%w: libonnxruntime.so not found (looked next to the executable, in its ../lib/plan, and for %s in the working directory and its parents): run `make assets` in the plan checkout (it fetches ONNX Runtime %s for Linux x64), or set %s to the path of a libonnxruntime.so %s.x",
		ErrNoLibrary, libRel, ORTVersion, LibEnv, ORTMinor)
}

// libraryPath applies findLibrary to this process.
func libraryPath() (string, error) {
	exe, _ := os.Executable()
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real // a symlink to an installed binary finds the library beside the binary
	}
	cwd, _ := os.Getwd()
	return findLibrary(os.Getenv(LibEnv), exe, cwd)
}

// ORTVersion is the ONNX Runtime release the bindings (github.com/yalue/onnxruntime_go
// v1.27.0, C API version 24) are built against and that scripts/fetch-assets.sh installs.
const ORTVersion = "1.24.1"

// ORTMinor is the release line whose libraries are compatible.
const ORTMinor = "1.24"
