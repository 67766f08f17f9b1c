package tinycascade

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
)

var update = flag.Bool("update", false, "rewrite testdata/cascade/onnx (models, workload, request bodies)")

// TestFiles keeps the committed tiny cascade identical to what the generator writes.
func TestFiles(t *testing.T) {
	files, err := Files()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("..", "..", Dir)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		path := filepath.Join(dir, n)
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, files[n], 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, files[n]) {
			t.Errorf("%s is stale: run go test ./internal/tinycascade -run TestFiles -update", path)
		}
	}
	// The workload decodes and validates as is.
	if _, err := formats.ReadInto[*formats.Workload](filepath.Join(dir, "workload.yaml"), intree.Sections()); err != nil {
		t.Fatal(err)
	}
}

// TestDeterministic: the same name gives the same bytes, different names different models.
func TestDeterministic(t *testing.T) {
	seen := map[string]string{}
	for _, n := range Names {
		a, err := Build(n)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Build(n)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s: two builds differ", n)
		}
		if o, ok := seen[string(a)]; ok {
			t.Errorf("%s and %s are the same model", n, o)
		}
		seen[string(a)] = n
	}
	if _, err := Build("nope"); err == nil {
		t.Error("an unknown model built")
	}
}

// TestCascadeProperties checks what makes the cascade worth serving: larger models are more
// accurate, every model's certainty varies across inputs (some samples confident, some not),
// and confident answers of the smallest model are more often right than its others
// (CascadeServe §2.1).
func TestCascadeProperties(t *testing.T) {
	models, ref, err := LoadAll()
	if err != nil {
		t.Fatal(err)
	}
	o, err := Run(models, ref, Inputs(Samples))
	if err != nil {
		t.Fatal(err)
	}
	prev := 0.0
	for _, n := range Names {
		acc := o.Accuracy(n)
		if !(acc > prev) || acc >= 1 {
			t.Errorf("%s: accuracy %.3f after %.3f: want strictly increasing below 1", n, acc, prev)
		}
		prev = acc
		lo, hi := 0, 0
		for _, p := range o.Probs[n] {
			sum := 0.0
			for _, v := range p {
				sum += v
			}
			if sum < 0.999 || sum > 1.001 {
				t.Fatalf("%s: probabilities sum to %g", n, sum)
			}
			c, _ := Top(p)
			if c < 0.6 {
				lo++
			}
			if c > 0.9 {
				hi++
			}
		}
		if lo < Samples/10 || hi < Samples/10 {
			t.Errorf("%s: %d samples below 0.6 certainty and %d above 0.9: want at least %d of each", n, lo, hi, Samples/10)
		}
	}
	var okHi, nHi, okLo, nLo int
	for s, p := range o.Probs[Names[0]] {
		c, l := Top(p)
		if c >= 0.8 {
			nHi++
			if l == o.Labels[s] {
				okHi++
			}
		} else {
			nLo++
			if l == o.Labels[s] {
				okLo++
			}
		}
	}
	if hi, lo := float64(okHi)/float64(nHi), float64(okLo)/float64(nLo); !(hi > lo+0.1) {
		t.Errorf("mlp-s: accuracy %.3f on confident samples vs %.3f on the others: certainty does not predict correctness", hi, lo)
	}
	conf, unc := Pick(o)
	if conf < 0 || unc < 0 {
		t.Fatalf("no confident (%d) or uncertain (%d) sample to show", conf, unc)
	}
}

func TestTop(t *testing.T) {
	for _, tc := range []struct {
		p     []float64
		cert  float64
		label int
	}{
		{[]float64{0.1, 0.7, 0.2}, 0.7, 1},
		{[]float64{0.5, 0.5}, 0.5, 0}, // ties: the first
		{nil, 0, -1},
	} {
		c, l := Top(tc.p)
		if c != tc.cert || l != tc.label {
			t.Errorf("Top(%v) = %g, %d; want %g, %d", tc.p, c, l, tc.cert, tc.label)
		}
	}
	p := Softmax([]float64{1000, 1000})
	if p[0] != 0.5 || p[1] != 0.5 {
		t.Errorf("Softmax of large equal logits = %v", p)
	}
}

func TestEvalRejects(t *testing.T) {
	models, _, err := LoadAll()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := models[Names[0]].Eval(make([]float32, InputDim+1)); err == nil {
		t.Error("an input of the wrong length was evaluated")
	}
}
