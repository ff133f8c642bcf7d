package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/strandhq/strand/store"
)

// storedPrefix starts what MarshalStored writes. Strand before version 2
// wrote its JSON bare, with payloads (Value, Payload) as base64 strings;
// no JSON document starts with 'v', so the prefix tells the two apart.
const storedPrefix = "v2"

// MarshalStored returns the stored form of v, an API value the engine keeps
// in a run's state, history or tasks: its JSON, marked as written with
// payloads as JSON values.
func MarshalStored(v any) ([]byte, error) {
	// Encoded straight after the prefix: the history is written on every
	// commit, and json.Marshal would copy the JSON once more.
	var buf bytes.Buffer
	buf.WriteString(storedPrefix)
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// UnmarshalStored decodes what MarshalStored wrote into v, and also what
// Strand wrote before payloads became JSON values: that JSON is rewritten
// first, every payload of v's type from a base64 string (a document
// reference, for a Payload) into the payload's JSON form.
func UnmarshalStored(data []byte, v any) error {
	if rest, ok := bytes.CutPrefix(data, []byte(storedPrefix)); ok {
		return json.Unmarshal(rest, v)
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var tree any
	if err := d.Decode(&tree); err != nil {
		return err
	}
	tree, err := upgradeLegacy(tree, reflect.TypeOf(v))
	if err != nil {
		return fmt.Errorf("a payload written before version 2: %w", err)
	}
	b, err := json.Marshal(tree)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

var (
	valueType       = reflect.TypeFor[Value]()
	payloadType     = reflect.TypeFor[Payload]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
)

// upgradeLegacy rewrites node, JSON decoded without a type, that the
// version-1 encoding of type t produced.
func upgradeLegacy(node any, t reflect.Type) (any, error) {
	if node == nil {
		return nil, nil
	}
	switch t {
	case valueType:
		s, ok := node.(string)
		if !ok {
			return nil, fmt.Errorf("a payload is %T, not a base64 string", node)
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, err
		}
		return marshalRaw(Value(b))
	case payloadType:
		var legacy struct {
			Data []byte             `json:"d"`
			Doc  *store.DocumentRef `json:"doc"`
		}
		raw, err := json.Marshal(node)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, &legacy); err != nil {
			return nil, err
		}
		return marshalRaw(Payload{Data: legacy.Data, Doc: legacy.Doc})
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return node, nil // a type with a JSON form of its own (a time)
	}
	switch t.Kind() {
	case reflect.Pointer:
		return upgradeLegacy(node, t.Elem())
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return node, nil
		}
		list, ok := node.([]any)
		if !ok {
			return node, nil
		}
		for i, el := range list {
			var err error
			if list[i], err = upgradeLegacy(el, t.Elem()); err != nil {
				return nil, err
			}
		}
	case reflect.Map:
		obj, ok := node.(map[string]any)
		if !ok {
			return node, nil
		}
		for k, el := range obj {
			var err error
			if obj[k], err = upgradeLegacy(el, t.Elem()); err != nil {
				return nil, err
			}
		}
	case reflect.Struct:
		obj, ok := node.(map[string]any)
		if !ok {
			return node, nil
		}
		return obj, upgradeFields(obj, t)
	}
	return node, nil
}

// upgradeFields rewrites the fields of obj that struct type t declares,
// including those of the structs t embeds without a JSON name.
func upgradeFields(obj map[string]any, t reflect.Type) error {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if err := upgradeFields(obj, ft); err != nil {
					return err
				}
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		el, ok := obj[name]
		if !ok {
			continue
		}
		up, err := upgradeLegacy(el, f.Type)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		obj[name] = up
	}
	return nil
}

// marshalRaw returns v's JSON, to stand in a tree for json.Marshal.
func marshalRaw(v json.Marshaler) (any, error) {
	b, err := v.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return json.RawMessage(b), nil
}
