package dyorcbench

import (
	"encoding/json"
	"regexp"
	"testing"
)

// snake is the key style of every other --output json.
var snake = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// checkKeys reports every object key under v that is not snake_case.
func checkKeys(t *testing.T, path string, v any) {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if !snake.MatchString(k) {
				t.Errorf("%s: key %q is not snake_case", path, k)
			}
			checkKeys(t, path+"."+k, e)
		}
	case []any:
		for _, e := range x {
			checkKeys(t, path+"[]", e)
		}
	}
}

// TestJSONKeysSnakeCase: `plan bench dyorc --output json` and bench.json use snake_case keys,
// not Go field names ("MeanMs").
func TestJSONKeysSnakeCase(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
	}{
		{"result", &Result{Options: Quick(), Rows: []Row{{}}, Scale: []ScaleRow{{}}, Change: []ChangeRow{{}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatal(err)
			}
			if m, ok := v.(map[string]any); !ok || len(m) == 0 {
				t.Fatalf("no object: %s", b)
			}
			checkKeys(t, tc.name, v)
		})
	}
}
