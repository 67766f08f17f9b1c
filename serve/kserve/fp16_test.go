package kserve

import (
	"math"
	"testing"
)

func TestFP16(t *testing.T) {
	// Every half float widens and narrows back to itself (NaNs stay NaN).
	for h := 0; h < 1<<16; h++ {
		f := F16ToF32(uint16(h))
		back := F32ToF16(f)
		if math.IsNaN(float64(f)) {
			if back&0x7c00 != 0x7c00 || back&0x3ff == 0 {
				t.Fatalf("NaN %#04x came back as %#04x", h, back)
			}
			continue
		}
		if back != uint16(h) {
			t.Fatalf("%#04x → %g → %#04x", h, f, back)
		}
	}
	cases := []struct {
		f    float32
		want uint16
	}{
		{1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {65520, 0x7c00}, {1e9, 0x7c00},
		{float32(math.Inf(-1)), 0xfc00}, {5.960464477539063e-08, 0x0001}, {2e-8, 0},
		{1 + 1.0/2048, 0x3c00},                  // halfway: ties to even (down)
		{1 + 3.0/2048, 0x3c02},                  // halfway: ties to even (up)
		{6.103515625e-05, 0x0400},               // smallest normal
		{0.333333333, 0x3555},                   // nearest
		{float32(math.Copysign(0, -1)), 0x8000}, // negative zero keeps its sign
		{0, 0x0000},
	}
	for _, c := range cases {
		if got := F32ToF16(c.f); got != c.want {
			t.Errorf("F32ToF16(%g) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
	// Relative error of the rounding is at most 2^-11 in the normal range.
	for _, f := range []float32{3.14159, -123.456, 0.001, 4096.5, 1e-4} {
		g := F16ToF32(F32ToF16(f))
		if math.Abs(float64(g-f)) > math.Abs(float64(f))/2048 {
			t.Errorf("%g → %g: error above half an ulp", f, g)
		}
	}
}
