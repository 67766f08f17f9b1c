// Package optflag binds a typed options struct to command-line flags, so that a component's
// settings are declared once — one struct whose fields carry their defaults, documentation
// and flag names — and set the same way from flags, a config file (which sets flags: the
// command's config layer) or code (which sets the fields).
//
// A field takes part when it has a `flag` tag; its `help` tag is the usage line and its value
// when Bind is called is the default. `flag:"name,negate"` on a bool field spells the flag as
// its opposite (`--no-warm-start` sets WarmStart to false), so that a struct states what is on
// rather than what is off. Supported field types: bool, int, int64, float64, string,
// durations (time.Duration or any named type over it, such as formats.Duration) and any type
// that is a pflag.Value itself (or whose pointer is: a list with its own syntax). Bind panics
// on any other: a field tagged for a flag it cannot be is a programming error.
package optflag

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

var durationType = reflect.TypeFor[time.Duration]()

// Field is one flag of an options struct.
type Field struct {
	// Name is the flag name, Help its usage line.
	Name, Help string
	// Negate is set for a `negate` bool flag.
	Negate bool
}

// Fields lists the flags of opts (a pointer to a struct, or a struct), in field order.
func Fields(opts any) []Field {
	t := reflect.TypeOf(opts)
	if t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var out []Field
	for i := range t.NumField() {
		if f, ok := fieldOf(t.Field(i)); ok {
			out = append(out, f)
		}
	}
	return out
}

func fieldOf(sf reflect.StructField) (Field, bool) {
	tag, ok := sf.Tag.Lookup("flag")
	if !ok || tag == "" || tag == "-" {
		return Field{}, false
	}
	name, opt, _ := strings.Cut(tag, ",")
	return Field{Name: name, Help: sf.Tag.Get("help"), Negate: opt == "negate"}, true
}

// Bind adds a flag to fs for every tagged field of opts, a non-nil pointer to a struct: the
// flag sets the field, and the field's value now is the flag's default.
func Bind(fs *pflag.FlagSet, opts any) {
	v := reflect.ValueOf(opts)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("optflag.Bind: %T: want a non-nil pointer to a struct", opts))
	}
	v = v.Elem()
	for i := range v.NumField() {
		f, ok := fieldOf(v.Type().Field(i))
		if !ok {
			continue
		}
		if pv, ok := asValue(v.Field(i)); ok && !f.Negate {
			fs.VarPF(pv, f.Name, "", f.Help)
			continue
		}
		val := &value{v: v.Field(i), negate: f.Negate, field: v.Type().Field(i).Name}
		val.check()
		fl := fs.VarPF(val, f.Name, "", f.Help)
		if val.v.Kind() == reflect.Bool {
			fl.NoOptDefVal = "true" // --flag alone means true, as pflag's own bools
		}
	}
}

// asValue is the field as a pflag.Value, where its type (a map or a pointer) or its address
// implements one.
func asValue(f reflect.Value) (pflag.Value, bool) {
	if f.Kind() == reflect.Map || f.Kind() == reflect.Pointer {
		if pv, ok := f.Interface().(pflag.Value); ok && !f.IsNil() {
			return pv, true
		}
	}
	if pv, ok := f.Addr().Interface().(pflag.Value); ok {
		return pv, true
	}
	return nil, false
}

// value is a pflag.Value over one struct field.
type value struct {
	v      reflect.Value
	negate bool
	field  string
}

func (x *value) check() {
	switch k := x.v.Kind(); {
	case x.negate && k != reflect.Bool:
		panic(fmt.Sprintf("optflag: field %s: negate on a %s", x.field, x.v.Type()))
	case k == reflect.Int64 && x.v.Type().ConvertibleTo(durationType):
	case k == reflect.Bool, k == reflect.Int, k == reflect.Int64, k == reflect.Float64, k == reflect.String:
	default:
		panic(fmt.Sprintf("optflag: field %s: unsupported type %s", x.field, x.v.Type()))
	}
}

func (x *value) isDuration() bool {
	return x.v.Kind() == reflect.Int64 && x.v.Type() != reflect.TypeFor[int64]() && x.v.Type().ConvertibleTo(durationType)
}

// String is the field's value as the command line spells it.
func (x *value) String() string {
	switch {
	case x.isDuration() && x.v.Int() == 0:
		return "0" // as pflag's usage tells a zero default (not printed), which "0s" is not
	case x.isDuration():
		return time.Duration(x.v.Int()).String()
	case x.v.Kind() == reflect.Bool:
		return strconv.FormatBool(x.v.Bool() != x.negate)
	case x.v.Kind() == reflect.Int, x.v.Kind() == reflect.Int64:
		return strconv.FormatInt(x.v.Int(), 10)
	case x.v.Kind() == reflect.Float64:
		return strconv.FormatFloat(x.v.Float(), 'g', -1, 64)
	}
	return x.v.String()
}

// Set parses s as pflag's own flags of the field's type do.
func (x *value) Set(s string) error {
	switch {
	case x.isDuration():
		d, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		x.v.SetInt(int64(d))
	case x.v.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return err
		}
		x.v.SetBool(b != x.negate)
	case x.v.Kind() == reflect.Int, x.v.Kind() == reflect.Int64:
		n, err := strconv.ParseInt(s, 0, 64)
		if err != nil {
			return err
		}
		if x.v.OverflowInt(n) {
			return fmt.Errorf("%s: out of range", s)
		}
		x.v.SetInt(n)
	case x.v.Kind() == reflect.Float64:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return err
		}
		x.v.SetFloat(f)
	default:
		x.v.SetString(s)
	}
	return nil
}

// Type is the type pflag's usage prints beside the flag ("" for bools, as pflag's own).
func (x *value) Type() string {
	switch {
	case x.isDuration():
		return "duration"
	case x.v.Kind() == reflect.Bool:
		return "bool"
	case x.v.Kind() == reflect.Int:
		return "int"
	case x.v.Kind() == reflect.Int64:
		return "int64"
	case x.v.Kind() == reflect.Float64:
		return "float64"
	}
	return "string"
}
