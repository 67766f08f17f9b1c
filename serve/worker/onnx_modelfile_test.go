package worker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadModelNames: with --model DIR, a model name from the plan is a name: separators,
// "..", absolute paths and links out of DIR are refused, and the error for an outside file
// that exists is the error for one that does not.
func TestReadModelNames(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "models")
	outside := filepath.Join(base, "secret")
	for _, d := range []string{dir, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for path, body := range map[string]string{filepath.Join(dir, "ok.onnx"): "model", filepath.Join(outside, "x.onnx"): "secret"} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(outside, "x.onnx"), filepath.Join(dir, "link.onnx")); err != nil {
		t.Fatal(err)
	}
	models := []string{"a", "b"}
	for _, tc := range []struct {
		model, want string
	}{
		{"ok", ""},
		{"../secret/x", "must be a plain name"},
		{"../secret/none", "must be a plain name"},
		{"..", "must be a plain name"},
		{"sub/ok", "must be a plain name"},
		{`sub\ok`, "must be a plain name"},
		{filepath.Join(outside, "x"), "must be a plain name"},
		{"", "must be a plain name"},
		{"link", "cannot be read as a file inside"},
		{"none", "does not exist"},
	} {
		data, _, err := readModel(dir, models, tc.model)
		switch {
		case tc.want == "" && (err != nil || string(data) != "model"):
			t.Errorf("%q: %q %v", tc.model, data, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v, want an error with %q", tc.model, err, tc.want)
		}
	}
	// An outside file that exists and one that does not: the same error, but for the name.
	_, _, e1 := readModel(dir, models, "../secret/x")
	_, _, e2 := readModel(dir, models, "../secret/y")
	if e1 == nil || e2 == nil || strings.ReplaceAll(e1.Error(), "/x", "/y") != e2.Error() {
		t.Errorf("outside paths told apart: %v / %v", e1, e2)
	}
}
