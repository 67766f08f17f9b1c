package highs

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/plan-dev/plan/formats"
	"io/fs"
	"os"
	"path/filepath"
)

// EnvWasm names the environment variable that overrides where highs.wasm is
// looked for.
const EnvWasm = "PLAN_HIGHS_WASM"

// repoWasm is the wasm's place in a source checkout (scripts/fetch-assets.sh).
var repoWasm = filepath.Join("third_party", "highs", "highs.wasm")

// LoadWasm finds, reads and verifies highs.wasm. It returns the bytes and a
// description of where they came from. Search order:
//
//  1. $PLAN_HIGHS_WASM (an error if set but unreadable: the user asked for it);
//  2. highs.wasm next to the executable (installed layout);
//  3. ../third_party/highs/highs.wasm relative to the executable (bin/ in a checkout);
//  4. third_party/highs/highs.wasm in the working directory or any parent
//     (go test, go run);
//  5. a copy embedded with the build tag highs_embed.
//
// The first candidate that exists wins; if its sha256 is not the pinned one
// the result is an error, because the minified ABI table only fits that build.
func LoadWasm() ([]byte, string, error) {
	if p := os.Getenv(EnvWasm); p != "" {
		b, err := readWasm(p)
		if err != nil {
			return nil, "", fmt.Errorf("%w: %s=%s: %v (%s)", ErrUnavailable, EnvWasm, p, err, wasmHint)
		}
		return verified(b, p)
	}
	var searched []string
	for _, p := range candidates() {
		searched = append(searched, p)
		b, err := readWasm(p)
		if err == nil {
			return verified(b, p)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, "", fmt.Errorf("%w: %s: %v (%s)", ErrUnavailable, p, err, wasmHint)
		}
	}
	if len(embeddedWasm) > 0 {
		return verified(embeddedWasm, "embedded (highs_embed)")
	}
	return nil, "", fmt.Errorf("%w: highs.wasm not found (searched %q): %s", ErrUnavailable, searched, wasmHint)
}

// maxWasmBytes bounds a highs.wasm read (the pinned build is 3.5 MB).
const maxWasmBytes = 64 << 20

// readWasm reads a candidate through the one reader of files plan is given
// (formats.ReadBytesLimit): a FIFO, a device or a file past maxWasmBytes is refused at
// once, not read until it ends.
func readWasm(p string) ([]byte, error) { return formats.ReadBytesLimit(p, maxWasmBytes) }

// candidates lists the file locations of steps 2-4 of LoadWasm, without
// duplicates (bin/.. is often the working directory).
func candidates() []string {
	var out []string
	seen := make(map[string]bool)
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	if exe, err := os.Executable(); err == nil {
		if r, err := filepath.EvalSymlinks(exe); err == nil {
			exe = r
		}
		dir := filepath.Dir(exe)
		add(filepath.Join(dir, "highs.wasm"))
		add(filepath.Join(dir, "..", repoWasm))
	}
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; {
			add(filepath.Join(dir, repoWasm))
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return out
}

func verified(b []byte, from string) ([]byte, string, error) {
	if err := VerifyWasm(b); err != nil {
		return nil, "", fmt.Errorf("%s: %w", from, err)
	}
	return b, from, nil
}

// VerifyWasm checks that b is the pinned highs.wasm build.
func VerifyWasm(b []byte) error {
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != WasmSHA256 {
		return fmt.Errorf("%w: highs.wasm has sha256 %s, want %s (%s); its minified ABI is unknown to this build of plan (run `make assets`)",
			ErrUnavailable, got, WasmSHA256, Package)
	}
	return nil
}
