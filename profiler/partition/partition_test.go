package partition

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

func TestGreedyHandExample(t *testing.T) {
	// total 20, n = 4 → τ = 5.
	// 2+2 = 4; adding 3 → 7 (|2| > |1|): close → [0,2).
	// 3+1 = 4; adding 1 → 5 (|0| < |1|): keep; adding 9 → 14: close → [2,5).
	// 9 alone (longer than τ): adding 1 → 10 farther: close → [5,6).
	// the 4th block takes the remainder → [6,8).
	lat := []float64{2, 2, 3, 1, 1, 9, 1, 1}
	got := GreedyBounds(lat, 4)
	want := []int{0, 2, 5, 6, 8}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("GreedyBounds = %v, want %v", got, want)
	}
	// A huge first layer leaves fewer than n blocks.
	if got := GreedyBounds([]float64{100, 1, 1, 1}, 4); !reflect.DeepEqual(got, []int{0, 1, 4}) {
		t.Fatalf("huge layer: %v", got)
	}
}

// bruteForce enumerates every set of n−1 inner cut positions.
func bruteForce(lat [][]float64, cuts []int64, n int, lb, ub float64) (int64, bool) {
	layers := len(lat[0])
	best, found := int64(math.MaxInt64), false
	var rec func(start, j int, bounds []int)
	rec = func(start, j int, bounds []int) {
		if j == n-1 {
			b := append(append([]int(nil), bounds...), layers)
			if ok, cost := feasible(lat, cuts, n, b, lb, ub); ok && cost < best {
				best, found = cost, true
			}
			return
		}
		for p := start; p < layers; p++ {
			rec(p+1, j+1, append(bounds, p))
		}
	}
	rec(1, 0, []int{0})
	return best, found
}

func feasible(lat [][]float64, cuts []int64, n int, bounds []int, lb, ub float64) (bool, int64) {
	var cost int64
	for k := range lat {
		var total float64
		for _, v := range lat[k] {
			total += v
		}
		tgt := total / float64(n)
		for i := 0; i+1 < len(bounds); i++ {
			var s float64
			for q := bounds[i]; q < bounds[i+1]; q++ {
				s += lat[k][q]
			}
			if s < lb*tgt-1e-9*total || s > ub*tgt+1e-9*total {
				return false, 0
			}
		}
	}
	for i := 1; i+1 < len(bounds); i++ {
		cost += cuts[bounds[i]]
	}
	return true, cost
}

func TestMinTrafficMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	checked := 0
	for trial := 0; trial < 300; trial++ {
		layers := 3 + r.IntN(8)
		n := 2 + r.IntN(3)
		k := 1 + r.IntN(3)
		lat := make([][]float64, k)
		for i := range lat {
			lat[i] = make([]float64, layers)
			for q := range lat[i] {
				lat[i][q] = float64(r.IntN(10))
			}
		}
		cuts := make([]int64, layers+1)
		for p := range cuts {
			cuts[p] = int64(r.IntN(100))
		}
		lu := Ladder[r.IntN(len(Ladder))]
		want, ok := bruteForce(lat, cuts, min(n, layers), lu[0], lu[1])
		bounds, err := MinTrafficBounds(lat, cuts, n, lu[0], lu[1])
		if !ok {
			if !errors.Is(err, ErrNoPartition) {
				t.Fatalf("trial %d: brute force infeasible, DP returned %v, %v", trial, bounds, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("trial %d: DP: %v (brute force found cost %d)", trial, err, want)
		}
		okDP, got := feasible(lat, cuts, min(n, layers), bounds, lu[0], lu[1])
		if !okDP || got != want {
			t.Fatalf("trial %d: DP bounds %v cost %d feasible %v, brute force %d", trial, bounds, got, okDP, want)
		}
		checked++
	}
	if checked < 50 {
		t.Fatalf("only %d feasible trials", checked)
	}
}

func TestRunLadderAndFallback(t *testing.T) {
	lat := []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}
	in := Input{
		GPUs:       []string{"L4", "P4"},
		Latency:    [][]float64{lat, {3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}},
		Cuts:       []int64{0, 9, 9, 1, 9, 9, 9, 9, 9, 2, 9, 9, 0},
		ParamBytes: []int64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
		Blocks:     3,
	}
	res, err := Run(in, MinTraffic)
	if err != nil {
		t.Fatal(err)
	}
	if res.Info.Method != "min-traffic" || len(res.Blocks) != 3 || len(res.CutBytes) != 2 {
		t.Fatalf("result %+v", res)
	}
	var mem int64
	for _, b := range res.Blocks {
		mem += b.MemoryBytes
	}
	if mem != 12 || res.Blocks[0].FirstLayer != 0 || res.Blocks[2].EndLayer != 12 {
		t.Fatalf("blocks %+v", res.Blocks)
	}
	// One layer holding 95% of the time is infeasible at every rung: fall back to greedy.
	in.Latency = [][]float64{{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 300}}
	in.GPUs = []string{"L4"}
	res, err = Run(in, MinTraffic)
	if err != nil {
		t.Fatal(err)
	}
	if res.Info.Method != "greedy" {
		t.Fatalf("fallback: method %q", res.Info.Method)
	}
	if _, err := Run(Input{GPUs: []string{"L4"}, Latency: [][]float64{{1}}, Cuts: []int64{0}}, Greedy); err == nil {
		t.Fatal("bad cut length: want error")
	}
	if _, err := ParseMethod("fastest"); err == nil {
		t.Fatal("ParseMethod(fastest): want error")
	}
}

// BenchmarkMinTraffic partitions a 900-layer model (EfficientNet-B8 sized) balanced on 8 GPU
// types.
func BenchmarkMinTraffic(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	const layers, gpus = 900, 8
	in := Input{Blocks: 10, Cuts: make([]int64, layers+1)}
	for k := 0; k < gpus; k++ {
		in.GPUs = append(in.GPUs, string(rune('A'+k)))
		row := make([]float64, layers)
		for q := range row {
			row[q] = 1 + 100*r.Float64()
		}
		in.Latency = append(in.Latency, row)
	}
	for p := range in.Cuts {
		in.Cuts[p] = int64(r.IntN(1 << 20))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Run(in, MinTraffic); err != nil {
			b.Fatal(err)
		}
	}
}
