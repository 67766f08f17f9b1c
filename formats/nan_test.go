package formats

import (
	"math"
	"path/filepath"
	"reflect"
	"testing"
)

// TestEveryFloatRejectsNaNAndInf sets every float field of every good fixture, one at a time,
// to NaN and then to +Inf (as Go callers can; JSON cannot carry them) and requires a problem
// reported at exactly that field's path.
func TestEveryFloatRejectsNaNAndInf(t *testing.T) {
	for _, f := range goodFixtures(t) {
		doc := loadGood(t, filepath.Base(f))
		var leaves []floatLeaf
		collectFloats(reflect.ValueOf(doc).Elem(), "", &leaves)
		for _, leaf := range leaves {
			for _, bad := range []float64{math.NaN(), math.Inf(1)} {
				old := leaf.get()
				leaf.set(bad)
				found := false
				for _, e := range Validate(doc, inTree) {
					if e.Path == leaf.path {
						found = true
					}
				}
				leaf.set(old)
				if !found {
					t.Errorf("%s: %s = %v is not reported", filepath.Base(f), leaf.path, bad)
				}
			}
		}
		if errs := Validate(doc, inTree); len(errs) > 0 {
			t.Fatalf("%s: not restored: %v", f, errs)
		}
	}
}

type floatLeaf struct {
	path string
	get  func() float64
	set  func(float64)
}

// collectFloats finds every float64 reachable from v, with its JSON path as Validate writes it.
func collectFloats(v reflect.Value, path string, out *[]floatLeaf) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			collectFloats(v.Elem(), path, out)
		}
	case reflect.Struct:
		for _, f := range jsonFields(v.Type()) {
			collectFloats(v.FieldByIndex(f.Index), keyPath(path, f.Name), out)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			collectFloats(v.Index(i), idx(path, i), out)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			m, key := v, k
			p := keyPath(path, k.String())
			switch m.Type().Elem().Kind() {
			case reflect.Float64:
				*out = append(*out, floatLeaf{p,
					func() float64 { return m.MapIndex(key).Float() },
					func(x float64) { m.SetMapIndex(key, reflect.ValueOf(x)) }})
			case reflect.Struct:
				// Map values are not addressable: edit a copy and store it back.
				var inner []floatLeaf
				cp := reflect.New(m.Type().Elem()).Elem()
				cp.Set(m.MapIndex(key))
				collectFloats(cp, p, &inner)
				for _, l := range inner {
					l := l
					*out = append(*out, floatLeaf{l.path, l.get, func(x float64) { l.set(x); m.SetMapIndex(key, cp) }})
				}
			default:
				collectFloats(m.MapIndex(key), p, out)
			}
		}
	case reflect.Float64:
		fv := v
		*out = append(*out, floatLeaf{path, fv.Float, fv.SetFloat})
	}
}

// TestEveryIntRejectsNegative: no integer in any format may be negative (counts, sizes,
// indices, timestamps); setting any one to -1 is reported at its path.
func TestEveryIntRejectsNegative(t *testing.T) {
	for _, f := range goodFixtures(t) {
		doc := loadGood(t, filepath.Base(f))
		var leaves []intLeaf
		collectInts(reflect.ValueOf(doc).Elem(), "", &leaves)
		for _, leaf := range leaves {
			old := leaf.v.Int()
			leaf.set(-1)
			found := false
			for _, e := range Validate(doc, inTree) {
				if e.Path == leaf.path {
					found = true
				}
			}
			leaf.set(old)
			if !found {
				t.Errorf("%s: %s = -1 is not reported", filepath.Base(f), leaf.path)
			}
		}
	}
}

type intLeaf struct {
	path string
	v    reflect.Value
	set  func(int64)
}

func collectInts(v reflect.Value, path string, out *[]intLeaf) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			collectInts(v.Elem(), path, out)
		}
	case reflect.Struct:
		for _, f := range jsonFields(v.Type()) {
			collectInts(v.FieldByIndex(f.Index), keyPath(path, f.Name), out)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			collectInts(v.Index(i), idx(path, i), out)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			m, key := v, k
			p := keyPath(path, k.String())
			switch m.Type().Elem().Kind() {
			case reflect.Int:
				cur := m.MapIndex(key)
				*out = append(*out, intLeaf{p, cur, func(x int64) { m.SetMapIndex(key, reflect.ValueOf(int(x))) }})
			case reflect.Struct:
				var inner []intLeaf
				cp := reflect.New(m.Type().Elem()).Elem()
				cp.Set(m.MapIndex(key))
				collectInts(cp, p, &inner)
				for _, l := range inner {
					l := l
					*out = append(*out, intLeaf{l.path, l.v, func(x int64) { l.set(x); m.SetMapIndex(key, cp) }})
				}
			}
		}
	case reflect.Int, reflect.Int64:
		iv := v
		*out = append(*out, intLeaf{path, iv, iv.SetInt})
	}
}
