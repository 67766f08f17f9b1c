package testmode

import (
	"testing"
)

func TestFull(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want bool
	}{
		{"", false},
		{"0", false},
		{"true", false},
		{"1", true},
	} {
		t.Setenv(EnvFull, tc.env)
		if got := Full(); got != tc.want {
			t.Errorf("%s=%q: Full() = %v, want %v", EnvFull, tc.env, got, tc.want)
		}
	}
}

func TestHeavySkipsOutsideFull(t *testing.T) {
	t.Setenv(EnvFull, "")
	ran := false
	t.Run("heavy", func(t *testing.T) {
		Heavy(t, "the light case")
		ran = true
	})
	if ran {
		t.Error("a heavy case ran outside the full set")
	}
	t.Setenv(EnvFull, "1")
	t.Run("heavy-full", func(t *testing.T) {
		Heavy(t, "the light case")
		ran = true
	})
	if !ran {
		t.Error("a heavy case did not run in the full set")
	}
}
