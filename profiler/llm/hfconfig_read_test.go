package llm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/plan-dev/plan/formats"
)

// tinyConfig is the smallest config the reader takes: one layer, one head, hidden 64, a
// one-token vocabulary.
const tinyConfig = `{"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 1, "intermediate_size": 64, "vocab_size": 1, "max_position_embeddings": 2048`

// TestReadConfigsRefusesNonRegular: every config a --llm-config path reaches goes through
// formats' reader: a FIFO (whose open would block), a device, a link out of the directory
// (directly, or through a linked subdirectory) are refused naming the file, before a byte is
// read; a link inside the directory is read.
func TestReadConfigsRefusesNonRegular(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "config.json"), []byte(tinyConfig+`}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string) string // returns the path given to ReadConfigs
		want  error
	}{
		{"fifo in a directory", func(t *testing.T, dir string) string {
			mkfifo(t, filepath.Join(dir, "m", "config.json"))
			return dir
		}, formats.ErrNotRegular},
		{"fifo named", func(t *testing.T, dir string) string {
			mkfifo(t, filepath.Join(dir, "config.json"))
			return filepath.Join(dir, "config.json")
		}, formats.ErrNotRegular},
		{"link to a device", func(t *testing.T, dir string) string {
			symlink(t, "/dev/zero", filepath.Join(dir, "m", "config.json"))
			return filepath.Join(dir, "m")
		}, formats.ErrSymlinkOut},
		{"device named through a link", func(t *testing.T, dir string) string {
			symlink(t, "/dev/zero", filepath.Join(dir, "config.json"))
			return filepath.Join(dir, "config.json")
		}, formats.ErrNotRegular},
		{"link out of the directory", func(t *testing.T, dir string) string {
			symlink(t, filepath.Join(outside, "config.json"), filepath.Join(dir, "m", "config.json"))
			return dir
		}, formats.ErrSymlinkOut},
		{"linked subdirectory out", func(t *testing.T, dir string) string {
			symlink(t, outside, filepath.Join(dir, "m"))
			return dir
		}, formats.ErrSymlinkOut},
		{"link inside", func(t *testing.T, dir string) string {
			write(t, filepath.Join(dir, "m", "real.txt"), tinyConfig+`}`)
			symlink(t, "real.txt", filepath.Join(dir, "m", "config.json"))
			return dir
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := tc.setup(t, dir)
			ms, err := ReadConfigs(context.Background(), path)
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == nil:
				if len(ms) != 1 {
					t.Fatalf("%d models, want 1", len(ms))
				}
			case !errors.Is(err, tc.want) || !strings.Contains(err.Error(), "config.json"):
				t.Fatalf("err = %v, want %v naming the file", err, tc.want)
			}
		})
	}
}

// TestReadConfigsCancelled: a cancelled context stops reading a directory of configs before
// the next file (bounded work: none is read once it is cancelled).
func TestReadConfigsCancelled(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a", "b", "c"} {
		write(t, filepath.Join(dir, n, "config.json"), tinyConfig+`}`)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ms, err := ReadConfigs(ctx, dir)
	if !errors.Is(err, context.Canceled) || ms != nil || !strings.Contains(err.Error(), "after 0 of 3 configs") {
		t.Fatalf("models %d, err %v; want interrupted after 0 of 3", len(ms), err)
	}
}

// TestReadConfigEngineID: hf_model is the config's _name_or_path when it is a Hugging Face
// id; a local path, or no _name_or_path, leaves it empty (a path of the planning machine is no
// id an engine elsewhere loads); text that is not UTF-8, a lone surrogate or a control
// character is refused naming the file, field and value.
func TestReadConfigEngineID(t *testing.T) {
	pad := `, "pad": "` + strings.Repeat("x", 2*formats.SniffBytes) + `"` // past the reader's text sniff
	for _, tc := range []struct {
		name, field, wantHF, wantErr string
	}{
		{"hub id", `"meta-llama/Llama-3.1-8B"`, "meta-llama/Llama-3.1-8B", ""},
		{"bare hub name", `"gpt2"`, "gpt2", ""},
		{"absent", ``, "", ""},
		{"absolute path", `"/home/me/ckpt/step-100"`, "", ""},
		{"relative path", `"./out"`, "", ""},
		{"home path", `"~/models/m"`, "", ""},
		{"dot dot", `"org/../etc"`, "", ""},
		{"not utf-8", "\"\xff\xfe\"", "", `_name_or_path: "\xff\xfe": not UTF-8`},
		{"lone surrogate", `"\udc00"`, "", `_name_or_path: "\\udc00": not UTF-8`},
		{"control character", `"a\u0007b"`, "", "_name_or_path:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := tinyConfig + pad
			if tc.field != "" {
				doc += `, "_name_or_path": ` + tc.field
			}
			path := filepath.Join(t.TempDir(), "m", "config.json")
			write(t, path, doc+`}`)
			m, err := ReadConfigFile(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), path+": "+tc.wantErr) {
					t.Fatalf("err = %v, want %q naming the file", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.HF != tc.wantHF || m.Name != "m" {
				t.Fatalf("model %q hf %q, want m and %q", m.Name, m.HF, tc.wantHF)
			}
		})
	}
}

// TestReadConfigTiny: the smallest valid config has a parameter count above 0 (rounded to
// 0.01B it would be 0, which a profile refuses) and profiles.
func TestReadConfigTiny(t *testing.T) {
	for _, tc := range []struct {
		name, json string
	}{
		{"one layer, one head, vocab 1", tinyConfig + `}`},
		{"tied", tinyConfig + `, "tie_word_embeddings": true}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ReadConfig("c.json", "tiny", []byte(tc.json))
			if err != nil {
				t.Fatal(err)
			}
			if m.ParamsB <= 0 {
				t.Fatalf("params_billion %g", m.ParamsB)
			}
			p, err := EstimateModel(m, "H100", 1, "", "", 0)
			if err != nil {
				t.Fatal(err)
			}
			doc := &formats.Profile{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindProfile}, Metadata: formats.Metadata{Name: "t"}, LLMs: []formats.LLMProfile{*p}}
			if errs := doc.Validate(); len(errs) > 0 {
				t.Fatalf("profile does not validate: %v", errs)
			}
		})
	}
}

// TestHubID: Hugging Face repository ids against local paths.
func TestHubID(t *testing.T) {
	for id, want := range map[string]bool{
		"Qwen/Qwen3-14B": true, "gpt2": true, "01-ai/Yi-34B-Chat": true, "a/b.c_d-e": true,
		"": false, "/abs/path": false, "./rel": false, "../up": false, "~/m": false, "a/b/c": false,
		"a b/c": false, "org/": false, "/name": false, "org/..x": false, "-org/m": false, strings.Repeat("x", 97): false,
	} {
		if got := HubID(id); got != want {
			t.Errorf("HubID(%q) = %v, want %v", id, got, want)
		}
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
