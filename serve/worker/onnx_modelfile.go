package worker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/profiler/onnx"
)

// readModel reads the ONNX file of model: --model (opt) names a directory holding MODEL.onnx
// for every model of the plan, or one file when the plan has one model (models).
//
// A model's name comes from the plan, which PUT /v1/plan may replace: it is a name, not a
// path. A name with a separator, "..", or an absolute or volume path is
// refused before the file system is touched, and the file is opened through an os.Root on
// the directory, so neither a name nor a symbolic link inside the directory reaches a file
// outside it; the errors name the model and the directory only, never whether something
// outside exists.
func readModel(opt string, models []string, model string) (data []byte, path string, err error) {
	st, err := os.Stat(opt)
	if err != nil {
		return nil, "", fmt.Errorf("--model: %w", err)
	}
	if !st.IsDir() {
		if len(models) > 1 {
			return nil, "", fmt.Errorf("--model %s: the plan serves %d models (%s): name a directory holding MODEL.onnx for each", opt, len(models), strings.Join(models, ", "))
		}
		data, err := onnx.ReadFile(opt) // the guarded reader: a regular file, bounded
		if err != nil {
			return nil, "", fmt.Errorf("model %s: %w", model, err)
		}
		return data, opt, nil
	}
	if err := checkModelName(model); err != nil {
		return nil, "", err
	}
	name := model + ".onnx"
	path = filepath.Join(opt, name)
	root, err := os.OpenRoot(opt)
	if err != nil {
		return nil, "", fmt.Errorf("--model %s: %w", opt, err)
	}
	defer root.Close()
	data, err = readRootFile(root, name)
	switch {
	case err == nil:
		return data, path, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, "", fmt.Errorf("model %s: %s does not exist (--model %s holds MODEL.onnx for each model of the plan)", model, path, opt)
	default:
		// An escaping link, a directory, no permission: said without the OS's details,
		// which could describe what lies outside the directory.
		return nil, "", fmt.Errorf("model %s: %s cannot be read as a file inside --model %s", model, path, opt)
	}
}

// checkModelName refuses a model name that is not a plain file name.
func checkModelName(model string) error {
	if model == "" || strings.ContainsAny(model, `/\`) || strings.Contains(model, "..") || !filepath.IsLocal(model+".onnx") || filepath.Base(model) != model {
		return fmt.Errorf("model %q in the plan: a model's name must be a plain name (no path separators, no \"..\", not absolute): onnx workers open --model DIR/NAME.onnx", model)
	}
	return nil
}

// readRootFile reads a regular file of at most onnx.MaxModelBytes inside root (a FIFO would
// block start-up forever, /dev/zero would grow without bound). What is not a regular
// file is refused before it is opened.
func readRootFile(root *os.Root, name string) ([]byte, error) {
	st, err := root.Stat(name)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, formats.ErrNotRegular
	}
	if st.Size() > onnx.MaxModelBytes {
		return nil, formats.ErrTooLarge
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil || !st.Mode().IsRegular() { // replaced since
		return nil, formats.ErrNotRegular
	}
	return formats.ReadAllLimit(f, onnx.MaxModelBytes)
}
