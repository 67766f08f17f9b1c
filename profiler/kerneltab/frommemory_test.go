package kerneltab

import (
	"testing"

	"github.com/plan-dev/plan/internal/base/gpucat"
)

// TestGenerationAttentionFromMemory: a decode attention point measured over a cache that
// fits in the L2 is raised to at least what reading that cache from memory takes; a point
// over a cache larger than the L2 is the measurement; the raw lookup never changes.
func TestGenerationAttentionFromMemory(t *testing.T) {
	for _, tc := range []struct {
		gpu        string
		batch      int
		step       float64
		wantRaised bool
	}{
		{"H100", 8, 1023, true},   // 34 MB: the H100's 50 MB L2 held it
		{"H100", 8, 4095, false},  // 134 MB
		{"H100", 64, 4095, false}, // 1.1 GB
		{"L40S", 8, 2047, true},   // 67 MB under a 96 MB L2
		{"L40S", 32, 8191, false}, // 1.1 GB
		{"A100", 16, 511, false},  // 34 MB: measured on its memory line already (two 20 MB L2 halves)
		{"B200", 32, 511, true},   // 67 MB under 126 MB
		{"H100", 1, 15, false},    // 0.1 MB: the kernel's fixed time either way
	} {
		tb, err := Load(tc.gpu)
		if err != nil {
			t.Fatal(err)
		}
		const heads, kvHeads, headDim = 32, 8, 128
		raw, _, err := tb.GenerationAttentionUs(tc.batch, heads, kvHeads, headDim, BF16, tc.step)
		if err != nil {
			t.Fatal(err)
		}
		cold, _, raised, err := tb.GenerationAttentionFromMemoryUs(tc.batch, heads, kvHeads, headDim, BF16, tc.step)
		if err != nil {
			t.Fatal(err)
		}
		spec, _ := gpucat.Lookup(tc.gpu)
		bytes := float64(tc.batch*kvHeads*headDim*2*2) * (tc.step + 1)
		floorUs := bytes / (spec.MemBWGBps * 1e3)
		t.Logf("%s b=%d step=%g (%.0f MB): measured %.1f µs, from memory %.1f µs (memory floor %.1f µs)", tc.gpu, tc.batch, tc.step, bytes/1e6, raw, cold, floorUs)
		if raised != tc.wantRaised || (cold > raw) != tc.wantRaised || cold < raw {
			t.Errorf("%s b=%d step=%g: measured %.2f, from memory %.2f (raised %v), want raised %v", tc.gpu, tc.batch, tc.step, raw, cold, raised, tc.wantRaised)
		}
		if tc.wantRaised && cold < floorUs {
			t.Errorf("%s b=%d step=%g: from memory %.2f µs, under the %.2f µs its bytes take at the datasheet bandwidth", tc.gpu, tc.batch, tc.step, cold, floorUs)
		}
	}
}
