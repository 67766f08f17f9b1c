package formats

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestDuplicateKeys: encoding/json kept the last of two equal keys
// (`"count": 64, "count": 1` planned for one GPU) where YAML refused the file. A JSON
// duplicate at any depth is refused, naming the file, the key's path and its line.
func TestDuplicateKeys(t *testing.T) {
	cases := []struct {
		name string
		doc  string
		want []string // problems, in order; none: no duplicate
	}{
		{"none", `{"a": 1, "b": {"a": 2}, "c": [{"a": 1}, {"a": 2}]}`, nil},
		{"top level", `{"a": 1, "a": 2}`, []string{`f.json: a: duplicate key "a" (line 1)`}},
		{"nested object", "{\"m\": {\"x\": 1,\n \"x\": 2}}", []string{`f.json: m.x: duplicate key "x" (line 2)`}},
		{"in an array element", `{"g": [{"c": 1}, {"c": 64, "c": 1}]}`, []string{`f.json: g[1].c: duplicate key "c"`}},
		{"after nested values", `{"a": {"b": [1, [2, 3], {"c": 4}]}, "d": [], "a": 0}`, []string{`f.json: a: duplicate key "a"`}},
		{"deep in arrays of arrays", `{"a": [[1], [{"k": 1, "k": 2}]]}`, []string{`f.json: a[1][0].k: duplicate key "k"`}},
		{"escaped spelling of the same key", `{"ab": 1, "a\u0062": 2}`, []string{`f.json: ab: duplicate key "ab"`}},
		{"every duplicate", `{"a": 1, "a": 2, "b": {"c": 1, "c": 2}}`, []string{`f.json: a: duplicate`, `f.json: b.c: duplicate`}},
		{"YAML is the YAML decoder's", "a: 1\nb: 2\n", nil},
		{"bad JSON is the decoder's", `{"a": 1, "a"`, []string{`f.json: a: duplicate`}},
		{"bad JSON before any duplicate", `{"a": 1,, "a": 2}`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkDuplicateKeys("f.json", []byte(c.doc))
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("got %v, want none", err)
				}
				return
			}
			if !errors.Is(err, ErrDecode) || !errors.Is(err, ErrDuplicateKey) {
				t.Fatalf("got %v, want ErrDecode and ErrDuplicateKey", err)
			}
			probs := Problems(err)
			if len(probs) != len(c.want) {
				t.Fatalf("%d problems, want %d:\n%v", len(probs), len(c.want), err)
			}
			for i, w := range c.want {
				if got := probs[i].Error(); !strings.HasPrefix(got, w) {
					t.Errorf("problem %d = %q, want prefix %q", i, got, w)
				}
			}
		})
	}
}

// TestReadFileDuplicateKeys: the fixtures are refused by ReadFile, the path every command
// reads documents through (validate, check, simulate, export, serve).
func TestReadFileDuplicateKeys(t *testing.T) {
	root := filepath.Join("..", "testdata", "badinput")
	cases := []struct {
		file string
		want []string
	}{
		{"plan-duplicate-key.json", []string{`cluster.gpus[0].count: duplicate key "count" (line 99)`}},
		{"cluster-duplicate-nested.json", []string{`metadata.name: duplicate key "name"`, `gpus[1].per_server: duplicate key "per_server" (line 3)`}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join(root, c.file)
			_, err := ReadFile(path, inTree)
			if !errors.Is(err, ErrDecode) {
				t.Fatalf("got %v, want a decode error", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), path+": "+w) {
					t.Errorf("error lacks %q:\n%v", path+": "+w, err)
				}
			}
		})
	}
}

// BenchmarkDuplicateKeys measures the streaming check on a large generated document.
func BenchmarkDuplicateKeys(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"requests": [`)
	for i := 0; i < 100000; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"t_us": 12345, "model": "resnet", "tokens": 17}`)
	}
	sb.WriteString(`]}`)
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := checkDuplicateKeys("b.json", data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJSONTreeReference is the generic-tree parse the decoder already does, to compare.
func BenchmarkJSONTreeReference(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"requests": [`)
	for i := 0; i < 100000; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"t_us": 12345, "model": "resnet", "tokens": 17}`)
	}
	sb.WriteString(`]}`)
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := jsonTree(data); err != nil {
			b.Fatal(err)
		}
	}
}
