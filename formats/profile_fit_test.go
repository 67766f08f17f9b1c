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

// TestMonotoneFit: the fit is non-decreasing with non-increasing per-item time, leaves a
// monotone curve as measured, reports a dip and a falling last pair and plans on their
// neighbours' curve, and never goes below the last per-item time past the table (issue 31
// item 1: bert-mini at batch 1000 came out at −9,158 µs from a noisy last pair).
func TestMonotoneFit(t *testing.T) {
	bs := batches(100)
	pow2 := []float64{1, 2, 4, 8, 16, 32, 64}
	cases := []struct {
		name    string
		bs, ys  []float64
		off     []float64 // batches reported
		at      map[float64][2]float64
		changed bool
	}{
		{name: "monotone as measured", bs: bs, ys: linear(2000, 750, bs, nil)},
		{name: "powers of two", bs: pow2, ys: linear(500, 100, pow2, nil), at: map[float64][2]float64{3: {800, 800}, 128: {13800, 13800}}},
		{name: "dip at 71", bs: bs, ys: linear(2000, 750, bs, map[float64]float64{71: 39600}), off: []float64{71},
			at: map[float64][2]float64{71: {55250, 55250}}, changed: true},
		{name: "falling last pair", bs: bs, ys: linear(2000, 750, bs, map[float64]float64{100: 40000}), off: []float64{100},
			at: map[float64][2]float64{100: {76250 * 100 / 99.0, 76250 * 100 / 99.0}, 1000: {76250 * 1000 / 99.0, 76250 * 1000 / 99.0}}, changed: true},
		{name: "small noise kept", bs: bs, ys: linear(2000, 750, bs, map[float64]float64{50: 39000, 51: 40000}), changed: true,
			at: map[float64][2]float64{50: {39200, 39800}}},
		{name: "rising per-item time kept", bs: []float64{1, 2, 3, 4}, ys: []float64{100, 210, 330, 460}},
		{name: "one point", bs: []float64{8}, ys: []float64{800}, at: map[float64][2]float64{1: {800, 800}, 16: {1600, 1600}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fit, off := MonotoneFit(c.bs, c.ys)
			var gotOff []float64
			for j, o := range off {
				if o {
					gotOff = append(gotOff, c.bs[j])
				}
			}
			if !reflect.DeepEqual(gotOff, c.off) {
				t.Errorf("off = %v, want %v", gotOff, c.off)
			}
			rising := c.ys[len(c.ys)-1]*c.bs[0] > c.ys[0]*c.bs[len(c.bs)-1]
			for j := 1; j < len(fit); j++ {
				if fit[j] < fit[j-1] {
					t.Fatalf("fit falls at batch %g: %g < %g", c.bs[j], fit[j], fit[j-1])
				}
				if !rising && fit[j]/c.bs[j] > fit[j-1]/c.bs[j-1]*(1+1e-12) {
					t.Fatalf("per-item time rises at batch %g", c.bs[j])
				}
			}
			if got := !reflect.DeepEqual(fit, c.ys); got != c.changed {
				t.Errorf("changed = %v, want %v (fit %v)", got, c.changed, fit)
			}
			for b, want := range c.at {
				if got := CurveAt(c.bs, fit, b); got < want[0]-1e-6 || got > want[1]+1e-6 {
					t.Errorf("CurveAt(%g) = %g, want in [%g, %g]", b, got, want[0], want[1])
				}
			}
			for _, b := range []float64{1e3, 1e6} {
				if got := CurveAt(c.bs, fit, b); !(got > 0) || math.IsInf(got, 0) {
					t.Errorf("CurveAt(%g) = %g: must be finite and > 0", b, got)
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
			p, err := ReadInto[*Profile](c.file)
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
				if got := m.Fit == FitMonotone; got != c.fit[m.Name] {
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
			again, _ := ReadInto[*Profile](c.file)
			FitProfile(again)
			FitProfile(again)
			if !reflect.DeepEqual(again, p) {
				t.Error("fitting a fitted profile changed it")
			}
		})
	}
}

// FuzzMonotoneFit: whatever the measurements (positive and finite, as validation admits), the
// fit is finite, non-negative and non-decreasing, and the curve never goes negative or
// non-finite past the table (issue 31 item 1: the simulator never sees such a time).
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
		fit, off := MonotoneFit(bs, ys)
		if len(fit) != len(ys) || len(off) != len(ys) {
			t.Fatalf("lengths %d, %d for %d points", len(fit), len(off), len(ys))
		}
		for j, v := range fit {
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("fit[%d] = %g", j, v)
			}
			if j > 0 && v < fit[j-1]-1e-9*math.Abs(fit[j-1]) {
				t.Fatalf("fit falls at %d: %g < %g", j, v, fit[j-1])
			}
		}
		for _, x := range []float64{0.5, bs[len(bs)-1] + 1, 1e6} {
			if v := CurveAt(bs, fit, x); v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("CurveAt(%g) = %g", x, v)
			}
		}
	})
}
