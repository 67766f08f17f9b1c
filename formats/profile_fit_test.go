package formats

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

// linear is lat(b) = base + per·b at batches bs, with overrides.
func linear(base, per float64, bs []float64, set map[float64]float64) []float64 {
	ys := make([]float64, len(bs))
	for i, b := range bs {
		ys[i] = base + per*b
		if v, ok := set[b]; ok {
			ys[i] = v
		}
	}
	return ys
}

func batches(n int) []float64 {
	bs := make([]float64, n)
	for i := range bs {
		bs[i] = float64(i + 1)
	}
	return bs
}

// TestMonotoneFit: a point is replaced only when it is more than 25% off the isotonic fit of
// its neighbours, by their curve at its batch; every other point keeps its measured value
// (noise, a rising per-item time and non-monotone wobble included), and past the table the
// curve never falls below its last point or goes negative (bert-mini at
// batch 1000 came out at −9,158 µs from a noisy last pair).
func TestMonotoneFit(t *testing.T) {
	bs := batches(100)
	pow2 := []float64{1, 2, 4, 8, 16, 32, 64}
	b8 := batches(8)
	cases := []struct {
		name   string
		bs, ys []float64
		off    []float64 // batches reported
		// replaced: the batches whose value changed (the outliers, unless more than a third)
		replaced []float64
		at       map[float64][2]float64
	}{
		{name: "monotone as measured", bs: bs, ys: linear(2000, 750, bs, nil)},
		{name: "powers of two", bs: pow2, ys: linear(500, 100, pow2, nil), at: map[float64][2]float64{3: {800, 800}, 128: {13800, 13800}}},
		{name: "dip at 71", bs: bs, ys: linear(2000, 750, bs, map[float64]float64{71: 39600}), off: []float64{71}, replaced: []float64{71},
			at: map[float64][2]float64{71: {55250, 55250}}},
		{name: "spike at 30", bs: bs, ys: linear(2000, 750, bs, map[float64]float64{30: 60000}), off: []float64{30}, replaced: []float64{30},
			at: map[float64][2]float64{30: {24500, 24500}}},
		{name: "falling last pair", bs: bs, ys: linear(2000, 750, bs, map[float64]float64{100: 40000}), off: []float64{100}, replaced: []float64{100},
			at: map[float64][2]float64{100: {76250 * 100 / 99.0, 76250 * 100 / 99.0}, 1000: {76250 * 1000 / 99.0, 76250 * 1000 / 99.0}}},
		{name: "small noise as measured", bs: bs, ys: linear(2000, 750, bs, map[float64]float64{50: 39000, 51: 40000}),
			at: map[float64][2]float64{50: {39000, 39000}, 51: {40000, 40000}}},
		// A clean TensorRT-like block table: per-item time falls, then rises at batch 5, and
		// batch 7 is 3% below batch 6: in order within 25%, planned as measured.
		{name: "clean table as measured", bs: b8, ys: []float64{410, 520, 610, 700, 905, 1010, 980, 1150}},
		// A dip at batch 2 of a 4-point grid: below batch 1 and far below batch 3's per-item
		// time; batch 1, above the dip, is not the outlier (the second look clears it).
		{name: "dip at the start", bs: batches(4), ys: []float64{6099.7, 4000, 17473.1, 23535.4}, off: []float64{2}, replaced: []float64{2},
			at: map[float64][2]float64{2: {11786.4, 11786.4}}},
		// An upward spike at batch 1 (a stall while measuring): the line through batches 2
		// and 3 (6032.1), within [L(2)/2, L(2)]; batch 2, below it, is not the outlier.
		{name: "spike at batch 1", bs: batches(4), ys: []float64{30000, 11752.6, 17473.1, 23535.4}, off: []float64{1}, replaced: []float64{1},
			at: map[float64][2]float64{1: {6032.1, 6032.1}}},
		// Batch 1 a third of batch 2's per-item time (a batch-1 kernel) is in order.
		{name: "fast batch 1 as measured", bs: batches(4), ys: []float64{2000, 11752.6, 17473.1, 23535.4}},
		{name: "per-item time rising 40% as measured", bs: batches(4), ys: []float64{100, 280, 450, 640}},
		{name: "rising per-item time as measured", bs: []float64{1, 2, 3, 4}, ys: []float64{100, 210, 330, 460}},
		{name: "one point", bs: []float64{8}, ys: []float64{800}, at: map[float64][2]float64{1: {800, 800}, 16: {1600, 1600}}},
		// Two points, the second far below: no neighbours to tell which is wrong.
		{name: "falling pair reported", bs: []float64{1, 2}, ys: []float64{1000, 300}, off: []float64{1, 2}},
		// Three isolated dips in nine points: each replaced by its neighbours' curve.
		{name: "three dips", bs: batches(9), ys: []float64{100, 200, 25, 400, 25, 600, 25, 800, 900}, off: []float64{3, 5, 7},
			replaced: []float64{3, 5, 7}, at: map[float64][2]float64{3: {300, 300}, 5: {500, 500}, 7: {700, 700}}},
		// Four of nine points in a second regime (a stall from batch 6 on): not outliers of one
		// curve, reported and planned as measured.
		{name: "second regime reported", bs: batches(9), ys: []float64{100, 200, 300, 400, 500, 100, 110, 120, 130}, off: []float64{6, 7, 8, 9}},
		// A step up (a kernel switch at batch 6) is a shape the order allows.
		{name: "step as measured", bs: batches(9), ys: []float64{1000, 1100, 1200, 1300, 1400, 2000, 2100, 2200, 2300}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			used, off := MonotoneFit(c.bs, c.ys)
			var gotOff, gotRep []float64
			for j, o := range off {
				if o {
					gotOff = append(gotOff, c.bs[j])
				}
				if used[j] != c.ys[j] {
					gotRep = append(gotRep, c.bs[j])
				}
			}
			if !reflect.DeepEqual(gotOff, c.off) {
				t.Errorf("off = %v, want %v", gotOff, c.off)
			}
			if !reflect.DeepEqual(gotRep, c.replaced) {
				t.Errorf("replaced = %v, want %v (used %v)", gotRep, c.replaced, used)
			}
			for b, want := range c.at {
				if got := CurveAt(c.bs, used, b); got < want[0]-1e-6 || got > want[1]+1e-6 {
					t.Errorf("CurveAt(%g) = %g, want in [%g, %g]", b, got, want[0], want[1])
				}
			}
			last := used[len(used)-1]
			for _, b := range []float64{c.bs[len(c.bs)-1] + 1, 1e3, 1e6} {
				if got := CurveAt(c.bs, used, b); !(got >= last) || math.IsInf(got, 0) {
					t.Errorf("CurveAt(%g) = %g: must be finite and ≥ the last point's %g", b, got, last)
				}
			}
		})
	}
}

// TestFitProfile: the noisy fixture is fitted with the measured values kept beside the fit,
// a warning per injected fault names model, GPU, batch, value and neighbours, and fitting the
// result again changes nothing; the clean profile is left as it is.
func TestFitProfile(t *testing.T) {
	cases := []struct {
		file  string
		warns []string
		fit   map[string]bool
	}{
		{file: "../testdata/cascade/profile.json", fit: map[string]bool{}},
		{file: "../testdata/cascade/profile-noisy.json",
			warns: []string{
				"model bert-tiny on V100 (vgpu 1): batch 64 measured 829.5 µs, 51% below the monotone fit of its neighbours (batch 63: 1659 µs): planning on 1685.33 µs",
				"model bert-base on V100 (vgpu 1): batch 40 measured 26580 µs, 40% below the monotone fit of its neighbours (batch 39: 43380 µs, batch 41: 45220 µs): planning on 44300 µs",
			},
			fit: map[string]bool{"bert-tiny": true, "bert-base": true}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			p, err := ReadInto[*Profile](c.file, nil)
			if err != nil {
				t.Fatal(err)
			}
			ws := FitProfile(p)
			if len(ws) != len(c.warns) {
				t.Fatalf("%d warnings %v, want %d", len(ws), ws, len(c.warns))
			}
			for i, w := range ws {
				if !strings.Contains(w.String(), c.warns[i]) {
					t.Errorf("warning %d = %q\nwant it to contain %q", i, w, c.warns[i])
				}
			}
			for _, m := range p.Models {
				if got := m.Fit == FitOutliers; got != c.fit[m.Name] || (!got && m.Fit != FitNone) {
					t.Errorf("%s: fit = %q", m.Name, m.Fit)
				}
				raws := 0
				for _, e := range m.Latency {
					if len(e.RawBlockUs) > 0 {
						raws++
					}
				}
				if (raws > 0) != c.fit[m.Name] {
					t.Errorf("%s: %d entries keep raw values", m.Name, raws)
				}
			}
			if errs := p.Validate(); len(errs) > 0 {
				t.Fatalf("the fitted profile does not validate: %v", errs)
			}
			again, _ := ReadInto[*Profile](c.file, nil)
			FitProfile(again)
			FitProfile(again)
			if !reflect.DeepEqual(again, p) {
				t.Error("fitting a fitted profile changed it")
			}
		})
	}
}

// FuzzMonotoneFit: whatever the measurements (positive and finite, as validation admits),
// the values planned on are finite and non-negative, every value not reported is the
// measured one, and the curve never falls or goes non-finite past the table
// (the simulator never sees such a time).
func FuzzMonotoneFit(f *testing.F) {
	f.Add([]byte{10, 20, 30, 40, 5, 60, 70, 1})
	f.Add([]byte{200, 1, 200, 1, 200})
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || len(data) > 200 {
			return
		}
		var bs, ys []float64
		b := 0.0
		for i, v := range data {
			b += float64(1 + i%3)
			bs = append(bs, b)
			ys = append(ys, float64(v)*float64(1+i))
		}
		used, off := MonotoneFit(bs, ys)
		if len(used) != len(ys) || len(off) != len(ys) {
			t.Fatalf("lengths %d, %d for %d points", len(used), len(off), len(ys))
		}
		for j, v := range used {
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("used[%d] = %g", j, v)
			}
			if !off[j] && v != ys[j] {
				t.Fatalf("batch %g: not reported, yet planned on %g instead of the measured %g", bs[j], v, ys[j])
			}
		}
		last := used[len(used)-1]
		prev := last
		for _, x := range []float64{bs[len(bs)-1] + 1, bs[len(bs)-1] + 2, 1e6} {
			v := CurveAt(bs, used, x)
			if v < prev || math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("CurveAt(%g) = %g after %g", x, v, prev)
			}
			prev = v
		}
		if v := CurveAt(bs, used, 0.5); v < 0 || math.IsNaN(v) {
			t.Fatalf("CurveAt(0.5) = %g", v)
		}
	})
}
