package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/strandhq/strand/store"
)

// Value is a payload's bytes: a workflow's input or result, a signal's
// value, a query's arguments or answer, a memo entry, a failure's details.
//
// In JSON a Value is the JSON value its bytes hold, so that
//
//	{"workflow_type": "Order", "input": {"id": 7}}
//
// starts a workflow whose input is the bytes {"id": 7}. Bytes that are not
// JSON travel with their encoding named, as {"$base64": "..."}. A JSON
// value that is itself an object whose only key is "$base64", "$json" or
// "$document" travels wrapped as {"$json": value}, so every Value reads
// back as the bytes it was written from.
type Value []byte

// The keys of a Value's explicit forms.
const (
	base64Key   = "$base64"
	jsonKey     = "$json"
	documentKey = "$document"
)

// MarshalJSON returns v's JSON value, or its explicit form.
func (v Value) MarshalJSON() ([]byte, error) {
	if len(v) > 0 && json.Valid(v) {
		if key, _ := explicitForm(v); key == "" {
			return v, nil
		}
		return append(append([]byte(`{"`+jsonKey+`":`), v...), '}'), nil
	}
	b := make([]byte, 0, len(`{"`+base64Key+`":""}`)+base64.StdEncoding.EncodedLen(len(v)))
	b = append(b, `{"`+base64Key+`":"`...)
	b = base64.StdEncoding.AppendEncode(b, v)
	return append(b, `"}`...), nil
}

// UnmarshalJSON sets v to the bytes data stands for: the JSON value itself,
// or what its explicit form holds.
func (v *Value) UnmarshalJSON(data []byte) error {
	key, inner := explicitForm(data)
	switch key {
	case "":
		*v = bytes.Clone(data)
	case jsonKey:
		*v = bytes.Clone(inner)
	case base64Key:
		b, err := decodeBase64(inner)
		if err != nil {
			return fmt.Errorf("%s: %w", base64Key, err)
		}
		*v = b
	default:
		return fmt.Errorf("%s: a document reference where a value was expected", key)
	}
	return nil
}

// decodeBase64 decodes a JSON string of standard, padded base64 (without
// the line breaks Go's decoder would skip: the API's schema has none).
func decodeBase64(raw []byte) ([]byte, error) {
	if len(raw) < 2 || raw[0] != '"' {
		return nil, errors.New("want a string of base64")
	}
	text := raw[1 : len(raw)-1]
	if bytes.IndexByte(text, '\\') >= 0 {
		// Escapes ("\/", a line break): unquoted first. Rare: base64 has
		// nothing to escape.
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, errors.New("want a string of base64")
		}
		if strings.ContainsAny(s, "\r\n") {
			return nil, errors.New("a line break in base64")
		}
		text = []byte(s)
	}
	b := make([]byte, base64.StdEncoding.DecodedLen(len(text)))
	n, err := base64.StdEncoding.Decode(b, text)
	return b[:n], err
}

// The explicit forms' keys, quoted as JSON writes them.
var explicitKeys = [...][]byte{[]byte(`"` + base64Key + `"`), []byte(`"` + jsonKey + `"`), []byte(`"` + documentKey + `"`)}

const jsonSpace = " \t\r\n"

// explicitForm reports whether data, a valid JSON value, is an object whose
// only key is one of a Value's explicit forms (written without escapes),
// and returns that key and the key's value, a slice of data: payloads are
// large, so nothing is decoded or copied to find out.
func explicitForm(data []byte) (key string, inner []byte) {
	rest := bytes.TrimLeft(data, jsonSpace)
	if len(rest) == 0 || rest[0] != '{' {
		return "", nil
	}
	rest = bytes.TrimLeft(rest[1:], jsonSpace)
	for _, quoted := range explicitKeys {
		after, ok := bytes.CutPrefix(rest, quoted)
		if !ok {
			continue
		}
		after = bytes.TrimLeft(after, jsonSpace)
		if len(after) == 0 || after[0] != ':' {
			return "", nil
		}
		// What follows the colon, up to the object's closing brace, is the
		// key's value alone when the object has no other key.
		inner = bytes.TrimRight(after[1:], jsonSpace)
		inner = bytes.Trim(inner[:len(inner)-1], jsonSpace)
		if !json.Valid(inner) {
			return "", nil // more keys follow
		}
		return string(quoted[1 : len(quoted)-1]), inner
	}
	return "", nil
}

// Payload is an event's payload on the wire: a Value, or a reference to a
// document stored apart from the history, {"$document": {"id": ..., "size":
// ...}}. Reading a history with HistoryRequest.Resolve replaces the
// references by the documents' values.
type Payload store.Payload

// IsZero reports a payload without bytes or a document.
func (p Payload) IsZero() bool { return len(p.Data) == 0 && p.Doc == nil }

// MarshalJSON returns the payload's value, or its document reference.
func (p Payload) MarshalJSON() ([]byte, error) {
	if p.Doc != nil {
		ref, err := json.Marshal(p.Doc)
		if err != nil {
			return nil, err
		}
		return append(append([]byte(`{"`+documentKey+`":`), ref...), '}'), nil
	}
	return Value(p.Data).MarshalJSON()
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (p *Payload) UnmarshalJSON(data []byte) error {
	if key, inner := explicitForm(data); key == documentKey {
		var ref store.DocumentRef
		if err := json.Unmarshal(inner, &ref); err != nil {
			return fmt.Errorf("%s: %w", documentKey, err)
		}
		*p = Payload{Doc: &ref}
		return nil
	}
	var v Value
	if err := v.UnmarshalJSON(data); err != nil {
		return err
	}
	*p = Payload{Data: v}
	return nil
}
