package server

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/strandhq/strand/api"
)

// shape is what checkJSON knows of the JSON a Go type decodes from.
type shape struct {
	// fields are a struct's fields by JSON name (nil: not a struct, any
	// object goes).
	fields map[string]*shape
	// elem is the shape of a map's values or a slice's elements.
	elem *shape
}

// anyShape takes any value.
var anyShape = &shape{}

var shapes sync.Map // reflect.Type -> *shape

// shapeOf returns the shape of t, built once.
func shapeOf(t reflect.Type) *shape {
	if s, ok := shapes.Load(t); ok {
		return s.(*shape)
	}
	building := map[reflect.Type]*shape{}
	s := buildShape(t, building)
	for bt, bs := range building {
		shapes.LoadOrStore(bt, bs)
	}
	return s
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func buildShape(t reflect.Type, building map[reflect.Type]*shape) *shape {
	if s, ok := building[t]; ok {
		return s
	}
	if s, ok := shapes.Load(t); ok {
		return s.(*shape)
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return anyShape
	}
	switch t.Kind() {
	case reflect.Pointer:
		return buildShape(t.Elem(), building)
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return anyShape // base64
		}
		s := &shape{}
		building[t] = s
		s.elem = buildShape(t.Elem(), building)
		return s
	case reflect.Map:
		s := &shape{}
		building[t] = s
		s.elem = buildShape(t.Elem(), building)
		return s
	case reflect.Struct:
		s := &shape{fields: map[string]*shape{}}
		building[t] = s
		addFields(s, t, building)
		return s
	}
	return anyShape
}

// addFields adds the fields of struct t to s as encoding/json sees them:
// exported ones by their JSON name, embedded structs' fields promoted.
func addFields(s *shape, t reflect.Type, building map[reflect.Type]*shape) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			addFields(s, ft, building)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		s.fields[name] = buildShape(f.Type, building)
	}
}

// field finds a key's field as encoding/json does: the exact name, else one
// equal under case folding.
func (s *shape) field(key []byte) (*shape, bool) {
	if f, ok := s.fields[string(key)]; ok {
		return f, true
	}
	for name, f := range s.fields {
		if bytes.EqualFold([]byte(name), key) {
			return f, true
		}
	}
	return nil, false
}

// checkJSON checks data, a JSON text json.Unmarshal accepted into a value
// of type t, for what encoding/json lets pass: a top-level value that is
// not an object (null decodes as {}), keys of no field of t, and lone
// UTF-16 surrogate escapes (decoded as U+FFFD).
func checkJSON(data []byte, t reflect.Type) error {
	sc := &jsonScan{b: data}
	sc.space()
	if sc.i >= len(sc.b) || sc.b[sc.i] != '{' {
		return api.InvalidArgument("body", "want a JSON object")
	}
	return sc.value(shapeOf(t), "")
}

// jsonScan walks a valid JSON text.
type jsonScan struct {
	b []byte
	i int
}

func (sc *jsonScan) space() {
	for sc.i < len(sc.b) {
		switch sc.b[sc.i] {
		case ' ', '\t', '\n', '\r':
			sc.i++
		default:
			return
		}
	}
}

// value walks the value at sc.i, of shape s, at path.
func (sc *jsonScan) value(s *shape, path string) error {
	sc.space()
	switch sc.b[sc.i] {
	case '{':
		sc.i++
		for {
			sc.space()
			if sc.b[sc.i] == '}' {
				sc.i++
				return nil
			}
			if sc.b[sc.i] == ',' {
				sc.i++
				sc.space()
			}
			start := sc.i
			if err := sc.str(path); err != nil {
				return err
			}
			key := sc.b[start+1 : sc.i-1]
			if bytes.IndexByte(key, '\\') >= 0 {
				var k string
				json.Unmarshal(sc.b[start:sc.i], &k)
				key = []byte(k)
			}
			sc.space()
			sc.i++ // ':'
			next, at := anyShape, join(path, string(key))
			switch {
			case s.fields != nil:
				f, ok := s.field(key)
				if !ok {
					return api.InvalidArgument(at, "unknown field")
				}
				next = f
			case s.elem != nil:
				next, at = s.elem, path+"["+string(key)+"]"
			}
			if err := sc.value(next, at); err != nil {
				return err
			}
		}
	case '[':
		sc.i++
		elem := anyShape
		if s.elem != nil {
			elem = s.elem
		}
		for n := 0; ; n++ {
			sc.space()
			if sc.b[sc.i] == ']' {
				sc.i++
				return nil
			}
			if sc.b[sc.i] == ',' {
				sc.i++
			}
			if err := sc.value(elem, path+"["+strconv.Itoa(n)+"]"); err != nil {
				return err
			}
		}
	case '"':
		return sc.str(path)
	default: // a number, true, false or null
		for sc.i < len(sc.b) {
			switch sc.b[sc.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return nil
			}
			sc.i++
		}
		return nil
	}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// str walks the string at sc.i, refusing a lone surrogate escape.
func (sc *jsonScan) str(path string) error {
	sc.i++ // '"'
	for {
		j := bytes.IndexAny(sc.b[sc.i:], `"\`)
		sc.i += j
		if sc.b[sc.i] == '"' {
			sc.i++
			return nil
		}
		// An escape.
		if sc.b[sc.i+1] != 'u' {
			sc.i += 2
			continue
		}
		r := hex4(sc.b[sc.i+2 : sc.i+6])
		sc.i += 6
		switch {
		case r >= 0xD800 && r < 0xDC00:
			if sc.i+6 <= len(sc.b) && sc.b[sc.i] == '\\' && sc.b[sc.i+1] == 'u' {
				if lo := hex4(sc.b[sc.i+2 : sc.i+6]); lo >= 0xDC00 && lo < 0xE000 {
					sc.i += 6
					continue
				}
			}
			return api.InvalidArgument(path, "a lone UTF-16 surrogate escape (\\u%04x) is not a character", r)
		case r >= 0xDC00 && r < 0xE000:
			return api.InvalidArgument(path, "a lone UTF-16 surrogate escape (\\u%04x) is not a character", r)
		}
	}
}

func hex4(b []byte) rune {
	n, _ := strconv.ParseUint(string(b), 16, 32)
	return rune(n)
}
