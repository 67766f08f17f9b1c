package profile

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestEstimateAllObservesCancel: profiling many models (a --llm-config directory of
// thousands) stops between two models once the context is cancelled; a live one profiles
// every model.
func TestEstimateAllObservesCancel(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cancelled bool
		want      int // profiles written (cancelled: none)
	}{
		{"live", false, 2},
		{"cancelled", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancelled {
				cancel()
			}
			r := &profileRun{ctx: ctx, llmNames: []string{"llama-3.1-8b", "mistral-7b"}}
			ls, _, err := r.estimateAll([]string{"H100"})
			switch {
			case tc.cancelled && (!errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "after 0 of 2 models")):
				t.Fatalf("err = %v, want interrupted after 0 of 2 models", err)
			case !tc.cancelled && err != nil:
				t.Fatal(err)
			case len(ls) != tc.want:
				t.Fatalf("%d profiles, want %d", len(ls), tc.want)
			}
		})
	}
}
