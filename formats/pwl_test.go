package formats

import "testing"

func TestPWLAt(t *testing.T) {
	two := []PWLPoint{{Tokens: 10, Us: 100}, {Tokens: 20, Us: 300}}
	falling := []PWLPoint{{Tokens: 10, Us: 300}, {Tokens: 20, Us: 100}}
	cases := []struct {
		name string
		p    []PWLPoint
		x    int
		want float64
	}{
		{"empty", nil, 5, 0},
		{"flat below the first point", two, 1, 100},
		{"at a point", two, 20, 300},
		{"linear between", two, 15, 200},
		{"last segment extended", two, 30, 500},
		{"one point is flat", two[:1], 50, 100},
		{"a falling last segment is flat above", falling, 40, 100},
		{"a falling segment is used as measured", falling, 15, 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := PWLAt(c.p, c.x); got != c.want {
				t.Fatalf("PWLAt(%v, %d) = %g, want %g", c.p, c.x, got, c.want)
			}
		})
	}
}
