package cascadebench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/internal/onformats/benchapi"
)

func TestParseQPS(t *testing.T) {
	tests := []struct {
		name, data, err string
		n               int
	}{
		{"ok", "10\n# c\n\n20.5\n", "", 2},
		{"negative", "10\n-1\n", `t.txt: line 2: "-1": must be a rate >= 0`, 0},
		{"word", "x\n", `t.txt: line 1: "x": must be a rate >= 0`, 0},
		{"empty", "", "t.txt: no rates", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, err := ParseQPS("t.txt", []byte(tc.data))
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || len(q) != tc.n {
				t.Fatalf("%v %v", q, err)
			}
		})
	}
	s := Scale([]float64{10, 80, 20}, 7600)
	if s[1] != 7600 || s[0] != 950 {
		t.Fatalf("scale: %v", s)
	}
}

func FuzzParseQPS(f *testing.F) {
	f.Add("10\n20\n")
	f.Fuzz(func(t *testing.T, data string) {
		q, err := ParseQPS("f", []byte(data))
		if err == nil {
			for _, x := range q {
				if !(x >= 0) {
					t.Fatalf("accepted %v", x)
				}
			}
		}
	})
}

// TestQuickBench runs a reduced bench end to end (PLAN_CASCADE_BENCH=1; it takes tens of
// seconds) on PLAN_CASCADE_TRACE, or the synthetic shape when unset.
func TestQuickBench(t *testing.T) {
	if os.Getenv("PLAN_CASCADE_BENCH") == "" {
		t.Skip("set PLAN_CASCADE_BENCH=1")
	}
	var out bytes.Buffer
	env := benchapi.Env{Out: &out, Err: io.Discard, Infof: func(string, ...any) {},
		Table: func(h []string, rows [][]string) {
			fmt.Fprintln(&out, strings.Join(h, "\t"))
			for _, r := range rows {
				fmt.Fprintln(&out, strings.Join(r, "\t"))
			}
		}}
	c := &Command{quick: true, trace: os.Getenv("PLAN_CASCADE_TRACE")}
	if s := os.Getenv("PLAN_CASCADE_SETUPS"); s != "" {
		c.setups = strings.Split(s, ",")
	}
	if err := c.Run(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
}

// TestWritePlots draws the accuracy-vs-p95 and degradation plots of a small report: one
// PNG and one SVG per plot, none for a scenario without runs.
func TestWritePlots(t *testing.T) {
	rep := Report{
		Curves:  []Curve{{Setup: "bert", GPUs: 1, Served: Served{Requests: 10, Accuracy: 0.85, P95Ms: 100}}},
		MinGPUs: []MinGPUs{{System: "ms+", Target: 0.84, Feasible: true, Served: Served{Requests: 10, Accuracy: 0.844, P95Ms: 40}}},
		Degradation: []Degradation{
			{Setup: "bert", Scenario: "nominal", System: "cascadeserve", GPUs: 1, WindowS: 2, Acc: []float64{0.85, -1}, P95Ms: []float64{100, -1}},
			{Setup: "bert", Scenario: "nominal", System: "ms+", GPUs: 3, WindowS: 2, Acc: []float64{0.84, 0.83}, P95Ms: []float64{40, 500}},
		},
	}
	dir := t.TempDir()
	files, err := writePlots(dir, rep, Setups[:1])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"accuracy-vs-p95-bert", "degradation-bert-nominal-p95", "degradation-bert-nominal-accuracy"}
	if len(files) != 2*len(want) {
		t.Fatalf("files %v, want PNG and SVG of %v", files, want)
	}
	for _, w := range want {
		for _, ext := range []string{".png", ".svg"} {
			if st, err := os.Stat(dir + "/" + w + ext); err != nil || st.Size() == 0 {
				t.Errorf("%s%s: %v", w, ext, err)
			}
		}
	}
}

// TestFailGPU: losing the highest GPU removes its replicas, renormalizes the shares and
// drops a model left without replicas from the cascades (its predecessor forwards at its
// own threshold); a plan on one GPU has nothing left.
func TestFailGPU(t *testing.T) {
	cp := &cascadesec.CascadePlan{Task: "t",
		Placement: []cascadesec.Replica{{Model: "a", GPUs: []int{0}}, {Model: "a", GPUs: []int{1}}, {Model: "b", GPUs: []int{1}}, {Model: "c", GPUs: []int{0}}},
		Gears: []cascadesec.Gear{
			{Models: []string{"a", "b", "c"}, Thr: []float64{0.3, 0.6}, Share: map[string][]float64{"a": {0.25, 0.75}, "b": {1}, "c": {1}}},
			{Models: []string{"b", "a"}, Thr: []float64{0.4}, Share: map[string][]float64{"a": {0, 0}, "b": {1}}},
		}}
	got, err := failGPU(cp)
	if err != nil {
		t.Fatal(err)
	}
	want := &cascadesec.CascadePlan{Task: "t",
		Placement: []cascadesec.Replica{{Model: "a", GPUs: []int{0}}, {Model: "c", GPUs: []int{0}}},
		Gears: []cascadesec.Gear{
			{Models: []string{"a", "c"}, Thr: []float64{0.3}, Share: map[string][]float64{"a": {1}, "c": {1}}},
			{Models: []string{"a"}, Thr: []float64{}, Share: map[string][]float64{"a": {1}}},
		}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if _, err := failGPU(&cascadesec.CascadePlan{Placement: []cascadesec.Replica{{Model: "a", GPUs: []int{0}}}, Gears: []cascadesec.Gear{{Models: []string{"a"}}}}); err == nil {
		t.Error("a 1-GPU plan has nothing left")
	}
}
