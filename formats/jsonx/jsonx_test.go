package jsonx

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// body is shaped like an API request: numbers, an optional number, a nested struct list and
// an open map.
type body struct {
	Model     string             `json:"model"`
	MaxTokens int                `json:"max_tokens"`
	Temp      *float64           `json:"temperature,omitempty"`
	Inputs    []tensor           `json:"inputs"`
	Meta      map[string]float64 `json:"meta,omitempty"`
	Raw       json.RawMessage    `json:"raw,omitempty"`
	Any       any                `json:"any,omitempty"`
}

type tensor struct {
	Name  string    `json:"name"`
	Shape []int64   `json:"shape"`
	Data  []float64 `json:"data"`
}

// nest is depth levels of open brackets, a value, and the closing ones.
func nest(depth int) string {
	return strings.Repeat("[", depth) + "1" + strings.Repeat("]", depth)
}

func TestCheck(t *testing.T) {
	deep := strings.Repeat("[", 120_000) // 240 KB with its closing brackets
	deep += strings.Repeat("]", 120_000)
	for _, c := range []struct {
		name   string
		in     string
		closed bool
		kind   error  // nil: accepted
		want   string // in the message
	}{
		{"plain", `{"model":"m","max_tokens":5,"inputs":[{"name":"x","shape":[1],"data":[1.5]}]}`, true, nil, ""},
		{"nesting 64", `{"any":` + nest(63) + `}`, true, nil, ""},
		{"nesting 65", `{"any":` + nest(64) + `}`, true, ErrTooDeep, "any" + strings.Repeat("[0]", 63) + ": nested deeper than 64 levels"},
		{"240 KB of brackets", deep, false, ErrTooDeep, "nested deeper than 64 levels at byte 64"},
		{"duplicate key", `{"max_tokens":1,"max_tokens":2}`, true, ErrDuplicateKey, `duplicate key "max_tokens" at byte 16`},
		{"escaped duplicate", `{"max_tokens":1,"max\u005ftokens":2}`, true, ErrDuplicateKey, `duplicate key "max_tokens"`},
		{"case variant of a field", `{"max_tokens":1,"MAX_TOKENS":2}`, true, ErrCaseKey, `key "MAX_TOKENS" at byte 16 differs only in case from field "max_tokens"`},
		{"case variant alone", `{"MAX_TOKENS":2}`, false, ErrCaseKey, `field "max_tokens"`},
		{"Kelvin sign folds to k", "{\"max_to\u212aens\":2}", false, ErrCaseKey, `field "max_tokens"`},
		{"case variants of unknown keys", `{"foo":1,"FOO":2}`, false, ErrCaseKey, `key "FOO" at byte 9 differs only in case from key "foo"`},
		{"unknown keys differ", `{"foo":1,"bar":2}`, false, nil, ""},
		{"unknown field closed", `{"model":"m","nope":1}`, true, ErrUnknownField, `unknown field "nope" at byte 13`},
		{"map keys may differ in case", `{"meta":{"a":1,"A":2}}`, true, nil, ""},
		{"map duplicate", `{"meta":{"a":1,"b":2,"a":3}}`, true, ErrDuplicateKey, `meta: duplicate key "a" at byte 21`},
		{"many map keys sorted", `{"meta":{` + manyKeys(40, "k7") + `}}`, true, ErrDuplicateKey, `meta: duplicate key "k7"`},
		{"nested struct duplicate", `{"inputs":[{"name":"a"},{"name":"b","name":"c"}]}`, true, ErrDuplicateKey, `inputs[1]: duplicate key "name"`},
		{"any duplicate", `{"any":{"x":{"y":1,"y":2}}}`, true, ErrDuplicateKey, `any.x: duplicate key "y"`},
		{"raw message duplicate", `{"raw":{"y":1,"y":2}}`, true, ErrDuplicateKey, `raw: duplicate key "y"`},
		{"null number", `{"max_tokens":null}`, true, ErrNull, "max_tokens: null at byte 14 where a number is required"},
		{"null in a number list", `{"inputs":[{"data":[1,null]}]}`, true, ErrNull, "inputs[0].data[1]: null"},
		{"null map number", `{"meta":{"a":null}}`, true, ErrNull, "meta.a: null"},
		{"null pointer number", `{"temperature":null}`, true, nil, ""},
		{"null string", `{"model":null}`, true, nil, ""},
		{"trailing", `{"model":"m"} {}`, true, ErrTrailing, "data after the JSON value at byte 14"},
		{"syntax", `{"model":"m",}`, true, ErrSyntax, "invalid JSON at byte 13"},
		{"control char", "{\"model\":\"a\nb\"}", true, ErrSyntax, "control character"},
		{"bad number", `{"max_tokens":01}`, true, ErrSyntax, ""},
		{"invalid UTF-8 keys collide", "{\"any\":{\"\xff\":1,\"\xfe\":2}}", true, ErrDuplicateKey, "any: duplicate key \"\uFFFD\""},
		{"surrogate pair key", `{"any":{"\ud83d\ude00":1,"😀":2}}`, true, ErrDuplicateKey, `duplicate key "😀"`},
		{"long key cut", `{"any":{"` + strings.Repeat("k", 300) + `":1,"` + strings.Repeat("k", 300) + `":2}}`, true, ErrDuplicateKey, `… (300 bytes)`},
		{"newline key quoted", `{"a\nb":1}`, true, ErrUnknownField, `unknown field "a\nb"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Check([]byte(c.in), reflect.TypeFor[body](), Options{Closed: c.closed})
			if c.kind == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, c.kind) {
				t.Fatalf("got %v, want %v", err, c.kind)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("message %q lacks %q", err, c.want)
			}
			if len(err.Error()) > 3*MaxEcho {
				t.Errorf("message of %d bytes echoes too much", len(err.Error()))
			}
		})
	}
}

func manyKeys(n int, dup string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `"k%d":%d,`, i, i)
	}
	fmt.Fprintf(&b, `%q:0`, dup)
	return b.String()
}

// TestDecodeAgreesWithEncodingJSON: what Decode accepts decodes as encoding/json decodes it,
// and a syntax error is encoding/json's.
func TestDecodeAgreesWithEncodingJSON(t *testing.T) {
	in := `{"model":"m","max_tokens":7,"temperature":0.5,"inputs":[{"name":"x","shape":[2],"data":[1,2]}],"meta":{"a":1},"raw":{"z":[1]},"any":[true,null]}`
	var got, want body
	if err := Decode([]byte(in), &got, Options{Closed: true}); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(in), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Decode %+v, encoding/json %+v", got, want)
	}
	var se *json.SyntaxError
	if err := Decode([]byte(`{"model":}`), &got, Options{}); !errors.As(err, &se) || se.Offset != 10 {
		t.Errorf("syntax error: %#v", err)
	}
	if err := Decode([]byte(`{"model":"m"} x`), &got, Options{}); !errors.Is(err, ErrTrailing) {
		t.Errorf("trailing data: %v", err)
	}
	if err := Decode([]byte(`{"model":"m","x":1}`), &got, Options{Closed: true}); err == nil || err.Error() != `json: unknown field "x"` {
		t.Errorf("unknown field: %v", err)
	}
}

func TestQuote(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plan.json", `"plan.json"`},
		{"a\nfake: line", `"a\nfake: line"`},
		{strings.Repeat("x", 200), `"` + strings.Repeat("x", 200) + `"`},
		{strings.Repeat("x", 200_000), `"` + strings.Repeat("x", 200) + `"… (200000 bytes)`},
		{strings.Repeat("é", 150), `"` + strings.Repeat("é", 100) + `"… (300 bytes)`},
	} {
		if got := Quote(c.in); got != c.want {
			t.Errorf("Quote(%.20q…) = %.60s…, want %.60s…", c.in, got, c.want)
		}
	}
}

// allocated returns the bytes allocated by f (one run; the GC counters are cumulative).
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// memoryConst is the allocation allowed beyond MemoryFactor per input byte: the frames
// (at most MaxDepth) and the first growth steps of the key stack.
const memoryConst = 16 << 10

// checkMemory asserts Check's allocation bound on in, accepted or not.
func checkMemory(t *testing.T, in []byte, typ reflect.Type) {
	t.Helper()
	var err error
	n := allocated(func() { err = Check(in, typ, Options{}) })
	if limit := uint64(MemoryFactor*len(in) + memoryConst); n > limit {
		t.Errorf("Check of %d bytes (%v) allocated %d bytes, over %d", len(in), err, n, limit)
	}
}

// TestCheckMemory runs the hostile shapes at size: deep nesting (refused at level 65), a
// flat object of minimal keys (every key kept to be compared), keys of bytes that are not
// UTF-8, escaped keys, and long arrays of objects.
func TestCheckMemory(t *testing.T) {
	flat := func(n int, key func(i int) string) []byte {
		var b strings.Builder
		b.WriteString(`{"any":{`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"%s":0`, key(i))
		}
		b.WriteString(`}}`)
		return []byte(b.String())
	}
	short := func(i int) string { return fmt.Sprintf("%x", i) }
	for _, c := range []struct {
		name string
		in   []byte
	}{
		{"240 KB of brackets", []byte(strings.Repeat("[", 120_000) + strings.Repeat("]", 120_000))},
		{"objects 64 deep, repeated", []byte("[" + strings.Repeat(strings.Repeat(`{"a":`, 63)+"1"+strings.Repeat("}", 63)+",", 2000) + "1]")},
		{"flat keys", flat(200_000, short)},
		{"invalid UTF-8 keys", flat(50_000, func(i int) string { return strings.Repeat("\xff", 10) + short(i) })},
		{"escaped keys", flat(50_000, func(i int) string { return `\u00e9` + short(i) })},
		{"records", []byte("[" + strings.Repeat(`{"name":"x","shape":[1],"data":[1,2,3]},`, 20_000) + `{}]`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkMemory(t, c.in, reflect.TypeFor[[]tensor]())
			checkMemory(t, c.in, nil)
		})
	}
}

// FuzzCheckMemory: on any input — the seeds are nested and key-heavy documents, which the
// fuzzer mutates — Check never panics, allocates at most MemoryFactor bytes per input byte
// (plus the frames), and accepts only what encoding/json accepts.
func FuzzCheckMemory(f *testing.F) {
	f.Add([]byte(nest(70)), uint8(3))
	f.Add([]byte(`{"model":"m","max_tokens":1,"inputs":[{"name":"x","shape":[1],"data":[1]}]}`), uint8(1))
	f.Add([]byte(`{"a":{"b":[{"c":1,"c":2}]}}`), uint8(2))
	f.Add([]byte(`{"meta":{"\u0061":1,"a":null}}`), uint8(1))
	f.Fuzz(func(t *testing.T, in []byte, repeat uint8) {
		// The input repeated makes the sizes at which a per-byte factor shows.
		doc := []byte("[" + strings.Repeat(string(in)+",", int(repeat)) + "1]")
		for _, typ := range []reflect.Type{nil, reflect.TypeFor[body](), reflect.TypeFor[[]body]()} {
			checkMemory(t, doc, typ)
			if Check(in, typ, Options{}) == nil {
				var v any
				if typ != nil {
					v = reflect.New(typ).Interface()
				} else {
					v = new(any)
				}
				if err := json.Unmarshal(in, v); err != nil {
					var te *json.UnmarshalTypeError
					if !errors.As(err, &te) { // a wrong type is encoding/json's to report
						t.Errorf("Check accepted %q, encoding/json refuses it: %v", in, err)
					}
				}
			}
		}
	})
}
