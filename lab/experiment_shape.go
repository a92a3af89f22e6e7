package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// The shape check of an experiment file: each field of the type its Go
// struct says, no unknown field, with the path of the first wrong one.

// jsonSyntaxError turns a decoding error into one with a line and column.
func jsonSyntaxError(data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var off int64 = -1
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 {
		if strings.Contains(err.Error(), "EOF") {
			return errors.New("not a complete JSON object (file empty or cut short)")
		}
		return err
	}
	line, col := 1, 1
	for i := int64(0); i < off && i < int64(len(data)); i++ {
		if data[i] == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return fmt.Errorf("line %d, column %d: %v", line, col, err)
}

// checkShape walks decoded JSON against the Go type t (following json tags)
// and reports the first unknown field or wrong type with its path.
func checkShape(path string, v any, t reflect.Type) error {
	name := path
	if name == "" {
		name = "experiment"
	}
	if v == nil {
		return checkNull(name, t)
	}
	if t == reflect.TypeOf(json.RawMessage{}) {
		return nil // validated by whoever interprets it
	}
	if t.Kind() == reflect.Pointer {
		return checkShape(path, v, t.Elem())
	}
	wrong := func() error {
		return fmt.Errorf("%s: %s, want %s", name, describeValue(v), describeType(t))
	}
	switch t.Kind() {
	case reflect.Struct:
		return checkStructShape(path, v, t, wrong)
	case reflect.Map, reflect.Slice, reflect.Array:
		return checkElemShapes(path, v, t, wrong)
	case reflect.String:
		if _, ok := v.(string); !ok {
			return wrong()
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return wrong()
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return checkWholeNumber(path, name, v, t, wrong)
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			return wrong()
		}
		if _, err := strconv.ParseFloat(n.String(), 64); err != nil {
			return fmt.Errorf("%s: %s is %w (it does not fit a 64-bit float)", name, n, ErrTooLarge)
		}
	}
	return nil
}

// checkNull accepts null where t can be nil (and for raw JSON).
func checkNull(name string, t reflect.Type) error {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		return nil
	}
	if t == reflect.TypeOf(json.RawMessage{}) {
		return nil
	}
	return fmt.Errorf("%s: null, want %s", name, describeType(t))
}

// checkStructShape checks an object against struct type t: every key a
// field (or a suggestion of the field meant), every value of its field's
// type, in the keys' order.
func checkStructShape(path string, v any, t reflect.Type, wrong func() error) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return wrong()
	}
	fields := jsonFields(t)
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		f, ok := fields[k]
		if !ok {
			msg := fmt.Sprintf("%s: unknown field", join(path, k))
			if s := suggest(k, fields); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			return errors.New(msg)
		}
		if err := checkShape(join(path, k), obj[k], f.Type); err != nil {
			return err
		}
	}
	return nil
}

// checkElemShapes checks an object against map type t, or an array
// against slice or array type t: every element of t's element type.
func checkElemShapes(path string, v any, t reflect.Type, wrong func() error) error {
	if t.Kind() == reflect.Map {
		obj, ok := v.(map[string]any)
		if !ok {
			return wrong()
		}
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			if err := checkShape(join(path, k), obj[k], t.Elem()); err != nil {
				return err
			}
		}
		return nil
	}
	arr, ok := v.([]any)
	if !ok {
		return wrong()
	}
	for i, x := range arr {
		if err := checkShape(fmt.Sprintf("%s[%d]", path, i), x, t.Elem()); err != nil {
			return err
		}
	}
	return nil
}

// checkWholeNumber checks a number for an integer field: whole, and
// within the field's bounds (named when it is too large to decode).
func checkWholeNumber(path, name string, v any, t reflect.Type, wrong func() error) error {
	n, ok := v.(json.Number)
	if !ok {
		return wrong()
	}
	if _, err := n.Int64(); err == nil {
		return nil
	}
	f, ferr := strconv.ParseFloat(n.String(), 64)
	if (ferr == nil || errors.Is(ferr, strconv.ErrRange)) && f == math.Trunc(f) {
		// A whole number too big for the field: name its bound.
		if f > 0 {
			return fmt.Errorf("%s: %s is %w (max %s)", name, n, ErrTooLarge, maxOf(path, t))
		}
		return fmt.Errorf("%s: %s is %w", name, n, ErrTooSmall)
	}
	return fmt.Errorf("%s: %s is not a whole number", name, n)
}

// maxOf names the upper bound of an integer field, for values too large
// to decode at all.
func maxOf(path string, t reflect.Type) string {
	switch path {
	case "trials":
		return strconv.Itoa(MaxTrials)
	case "warmup":
		return strconv.Itoa(MaxWarmup)
	case "controls.pin_cpu":
		return strconv.Itoa(MaxCPU)
	}
	if t.Kind() == reflect.Int64 || t.Kind() == reflect.Int {
		return strconv.FormatInt(math.MaxInt64, 10)
	}
	return "the field's range"
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// jsonFields maps a struct's JSON names to its fields.
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	m := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		m[name] = f
	}
	return m
}

// suggest returns the known field closest to k, if any is close.
func suggest(k string, fields map[string]reflect.StructField) string {
	best, bestD := "", 3
	for name := range fields {
		if d := editDistance(strings.ToLower(k), name); d < bestD || (d == bestD && name < best && best != "") {
			best, bestD = name, d
		}
	}
	return best
}

func describeType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "a list of " + strings.TrimPrefix(strings.TrimPrefix(describeType(t.Elem()), "a "), "an ") + "s"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Float32, reflect.Float64:
		return "a number"
	default:
		return "a whole number"
	}
}

func describeValue(v any) string {
	switch x := v.(type) {
	case string:
		if len(x) > 30 {
			x = x[:30] + "…"
		}
		return fmt.Sprintf("string %q", x)
	case json.Number:
		return "number " + x.String()
	case bool:
		return fmt.Sprintf("%v", x)
	default:
		return jsonKind(v)
	}
}

func jsonKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}
