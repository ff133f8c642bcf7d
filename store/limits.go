package store

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Field size limits of the API's requests. They are written on the request
// types as struct tags that CheckLimits enforces and the OpenAPI document
// states (maxLength, maxItems, maxProperties):
//
//   - max:"N" on a string: at most N characters (Unicode code points, as
//     JSON Schema's maxLength counts them), ErrInvalidArgument above it.
//   - max:"N" on a []byte: at most N bytes (of the value, not of its base64
//     form), ErrPayloadTooLarge above it (ErrInvalidArgument for one tagged
//     token:"true", a token the server made).
//   - max:"N" on a slice or a map: at most N entries (ErrInvalidArgument).
//   - maxkey:"N" on a map: each key at most N characters.
//   - maxvalue:"N" on a map or a slice: each value or element at most N
//     characters (a string) or bytes (a []byte).
//   - text:"true" on a string or a map of strings: a store keeps it as
//     text, so it holds no NUL character (PostgreSQL's text refuses one,
//     and a visibility write would retry for ever).
//
// A limit on characters is also one on bytes: a character is at most 4
// bytes of UTF-8. What the stores index (ids, a run's type and business
// key, search attributes) is limited so that 4 bytes a character stays
// within their index keys: PostgreSQL refuses a btree entry over about
// 2.7 kB.
//
// Struct fields (direct, through pointers, in slices and map values) are
// checked by their own tags; the error's field is the path of JSON names,
// such as commands[2].step.queue or attributes[region].
const (
	// MaxIDChars bounds an id (workflow, run, request) at the API: 250
	// characters are at most MaxIDLength bytes.
	MaxIDChars = MaxIDLength / 4
	// MaxNamespaceChars bounds a namespace's name at the API (at most 252
	// bytes; the store takes 255).
	MaxNamespaceChars = 63
	// MaxIndexedChars bounds what visibility indexes besides ids: a run's
	// workflow type and business key.
	MaxIndexedChars = MaxIDChars
	// MaxNameLength bounds names that are not indexed: queues, step,
	// signal and query names, failure types.
	MaxNameLength = 1000
	// MaxIdentity bounds a caller's identity (a worker's, a client's).
	MaxIdentity = 256
	// MaxDescription bounds a namespace's description.
	MaxDescription = 4096
	// MaxReason bounds a cancel's or termination's reason and a failure's
	// message.
	MaxReason = 32 << 10
	// MaxAttributes bounds a run's search attributes; MaxAttributeKey and
	// MaxAttributeValue each of them, in characters (the SQL stores index
	// namespace, key and value together).
	MaxAttributes     = 64
	MaxAttributeKey   = 32
	MaxAttributeValue = 500
	// MaxMemo bounds a run's memo entries (and a namespace's data entries).
	MaxMemo = 64
	// MaxTokenLength bounds a task token or a page token as a request
	// carries it back (the server made it; its ids may be escaped).
	MaxTokenLength = 16 << 10
)

// CheckLimits checks v, a struct or a pointer to one, against the max,
// maxkey and maxvalue tags of its fields (see MaxIdentity's group). The
// walk of each type is planned once and cached.
func CheckLimits(v any) error {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil
		}
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct {
		return nil
	}
	p := planOf(rv.Type())
	if p == nil {
		return nil
	}
	return p.check(rv)
}

// structPlan is what CheckLimits checks of a struct type.
type structPlan struct {
	fields []fieldPlan
}

// fieldPlan is one field to check.
type fieldPlan struct {
	index                 int
	name                  string // JSON name; empty for an embedded struct
	max, maxKey, maxValue int
	// token: a []byte the server made (a task or page token); one longer
	// than max is not one of them, so it is ErrInvalidArgument, not
	// ErrPayloadTooLarge.
	token bool
	// text: a string (or a map's keys and values) a store keeps as text,
	// which holds no NUL: PostgreSQL's text refuses it.
	text bool
	sub  *structPlan // the plan of the struct it holds
}

var (
	plansMu sync.Mutex
	plans   sync.Map // reflect.Type -> *structPlan (nil: nothing to check)
)

// planOf returns the plan of struct type t (nil when nothing in it has a
// limit).
func planOf(t reflect.Type) *structPlan {
	if p, ok := plans.Load(t); ok {
		return p.(*structPlan)
	}
	plansMu.Lock()
	defer plansMu.Unlock()
	if p, ok := plans.Load(t); ok {
		return p.(*structPlan)
	}
	building := map[reflect.Type]*structPlan{}
	build(t, building)
	// Drop the fields with nothing to check, until none is left to drop
	// (a struct's plan empties when its fields' plans did).
	for changed := true; changed; {
		changed = false
		for _, bp := range building {
			kept := bp.fields[:0]
			for _, f := range bp.fields {
				if f.max > 0 || f.maxKey > 0 || f.maxValue > 0 || f.text || (f.sub != nil && len(f.sub.fields) > 0) {
					kept = append(kept, f)
				}
			}
			changed = changed || len(kept) != len(bp.fields)
			bp.fields = kept
		}
	}
	for bt, bp := range building {
		if len(bp.fields) == 0 {
			bp = nil
		}
		plans.Store(bt, bp)
	}
	p, _ := plans.Load(t)
	return p.(*structPlan)
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// leaf reports a type whose JSON form is its own (time.Time, a status).
func leaf(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return pt.Implements(unmarshalerType) || pt.Implements(textUnmarshalerType)
}

// build plans struct type t; building holds the plans under way, so that a
// recursive type (a failure's cause) refers to its own plan.
func build(t reflect.Type, building map[reflect.Type]*structPlan) *structPlan {
	if p, ok := plans.Load(t); ok {
		if p := p.(*structPlan); p != nil {
			return p
		}
		return &structPlan{}
	}
	if p, ok := building[t]; ok {
		return p
	}
	p := &structPlan{}
	building[t] = p
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() && !(f.Anonymous && f.Type.Kind() == reflect.Struct) {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" && !f.Anonymous {
			name = f.Name
		}
		fp := fieldPlan{index: i, name: name, max: tagInt(f, "max"), maxKey: tagInt(f, "maxkey"), maxValue: tagInt(f, "maxvalue"),
			token: f.Tag.Get("token") == "true", text: f.Tag.Get("text") == "true"}
		if inner := structOf(f.Type); inner != nil {
			fp.sub = build(inner, building)
		}
		p.fields = append(p.fields, fp)
	}
	return p
}

// structOf returns the struct type a field of type t holds (directly,
// through a pointer, as elements or map values), if it is one to walk.
func structOf(t reflect.Type) reflect.Type {
	for {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			t = t.Elem()
			continue
		case reflect.Struct:
			if leaf(t) {
				return nil
			}
			return t
		}
		return nil
	}
}

func tagInt(f reflect.StructField, key string) int {
	v, ok := f.Tag.Lookup(key)
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		panic(fmt.Sprintf("store: field %s: tag %s:%q is not a positive number", f.Name, key, v))
	}
	return n
}

// check checks a struct value; an error's field is relative to it.
func (p *structPlan) check(v reflect.Value) error {
	if p == nil {
		return nil
	}
	for i := range p.fields {
		f := &p.fields[i]
		if err := f.check(v.Field(f.index)); err != nil {
			return under(err, f.name)
		}
	}
	return nil
}

// under puts the field of a limit error under seg (a field name, or an
// index or key in brackets); an empty seg (an embedded struct) leaves it.
func under(err error, seg string) error {
	ia, ok := err.(*InvalidArgumentError)
	if !ok || seg == "" {
		return err
	}
	switch {
	case ia.Field == "":
		ia.Field = seg
	case strings.HasPrefix(ia.Field, "["):
		ia.Field = seg + ia.Field
	default:
		ia.Field = seg + "." + ia.Field
	}
	return ia
}

// checkString checks a string (a value, or a map key: what says which)
// against limit characters and, for text, against NUL; an error's field is
// filled in on the way up.
func (f *fieldPlan) checkString(v reflect.Value, limit int, what string) error {
	if n := chars(v, limit); n > limit {
		return invalid("", "%s%d characters; at most %d", what, n, limit)
	}
	if f.text && strings.IndexByte(v.String(), 0) >= 0 {
		return invalid("", "contains a NUL character")
	}
	return nil
}

// chars counts the characters of string v when a limit applies to it
// (limit > 0) and it may pass it (0 otherwise, which passes every limit).
func chars(v reflect.Value, limit int) int {
	if limit <= 0 || v.Len() <= limit {
		return 0 // no limit, or fewer bytes than the limit: fewer characters too
	}
	return utf8.RuneCountInString(v.String())
}

// key is a map key as an error's field shows it.
func key(k reflect.Value) string {
	s := fmt.Sprint(k.Interface())
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return "[" + s + "]"
}

// check checks one field's value; an error's field is relative to it.
func (f *fieldPlan) check(v reflect.Value) error {
	switch v.Kind() {
	case reflect.String:
		return f.checkString(v, f.max, "")
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			switch {
			case f.max <= 0 || v.Len() <= f.max:
			case f.token:
				return invalid("", "%d bytes, longer than any token the server makes (%d)", v.Len(), f.max)
			default:
				return tooLarge("", v.Len(), f.max)
			}
			return nil
		}
		if f.max > 0 && v.Len() > f.max {
			return invalid("", "%d entries; at most %d", v.Len(), f.max)
		}
		if f.maxValue == 0 && f.sub == nil {
			return nil
		}
		for i := range v.Len() {
			if err := f.value(v.Index(i)); err != nil {
				return under(err, "["+strconv.Itoa(i)+"]")
			}
		}
	case reflect.Map:
		if f.max > 0 && v.Len() > f.max {
			return invalid("", "%d entries; at most %d", v.Len(), f.max)
		}
		if f.maxKey == 0 && f.maxValue == 0 && !f.text && f.sub == nil {
			return nil
		}
		it := v.MapRange()
		for it.Next() {
			k := it.Key()
			if k.Kind() == reflect.String {
				if err := f.checkString(k, f.maxKey, "key of "); err != nil {
					return under(err, key(k))
				}
			}
			if err := f.value(it.Value()); err != nil {
				return under(err, key(k))
			}
		}
	default:
		return f.value(v)
	}
	return nil
}

// value checks an element of a slice, a value of a map, or a struct field
// (directly or through a pointer); an error's field is relative to it.
func (f *fieldPlan) value(v reflect.Value) error {
	switch v.Kind() {
	case reflect.String:
		return f.checkString(v, f.maxValue, "")
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 && f.maxValue > 0 && v.Len() > f.maxValue {
			return tooLarge("", v.Len(), f.maxValue)
		}
	case reflect.Pointer:
		if !v.IsNil() && f.sub != nil {
			return f.sub.check(v.Elem())
		}
	case reflect.Struct:
		return f.sub.check(v)
	}
	return nil
}
