package dyorcsec

import "testing"

func TestParseGuard(t *testing.T) {
	for _, tc := range []struct {
		in   string
		ref  string
		op   string
		val  float64
		fail bool
	}{
		{in: "ask.need", ref: "ask"},
		{in: "in.images>0", ref: "in", op: ">", val: 0},
		{in: " llm.img_tokens >= 2.5 ", ref: "llm", op: ">=", val: 2.5},
		{in: "x.y != -1", ref: "x", op: "!=", val: -1},
		{in: "in", fail: true},
		{in: "a.b > x", fail: true},
		{in: "> 3", fail: true},
		{in: "a..b", fail: true},
		{in: "a.b > NaN", fail: true},
	} {
		g, err := ParseGuard(tc.in)
		if (err != nil) != tc.fail {
			t.Fatalf("%q: err %v, want failure %v", tc.in, err, tc.fail)
		}
		if err == nil && (g.Ref != tc.ref || g.Op != tc.op || g.Value != tc.val) {
			t.Fatalf("%q: got %+v", tc.in, g)
		}
	}
}

func FuzzParseGuard(f *testing.F) {
	for _, s := range []string{"ask.need", "in.images>0", "a.b<=3", "x==", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		g, err := ParseGuard(s)
		if err == nil && g.Ref == "" {
			t.Fatalf("%q parsed without a reference", s)
		}
	})
}
