package api_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

func TestValueJSON(t *testing.T) {
	for _, c := range []struct {
		name  string
		value api.Value
		wire  string
	}{
		{"object", api.Value(`{"id":7}`), `{"id":7}`},
		{"string", api.Value(`"hello"`), `"hello"`},
		{"number", api.Value(`12345678901234567890`), `12345678901234567890`},
		{"null", api.Value(`null`), `null`},
		{"not JSON", api.Value("\x00\xffbinary"), `{"$base64":"AP9iaW5hcnk="}`},
		{"empty", api.Value{}, `{"$base64":""}`},
		{"looks like bytes", api.Value(`{"$base64":"AA=="}`), `{"$json":{"$base64":"AA=="}}`},
		{"looks like a wrapper", api.Value(`{"$json":1}`), `{"$json":{"$json":1}}`},
		{"looks like a document", api.Value(`{"$document":{"id":"x"}}`), `{"$json":{"$document":{"id":"x"}}}`},
		{"two keys", api.Value(`{"$base64":"AA==","other":1}`), `{"$base64":"AA==","other":1}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := json.Marshal(struct {
				V api.Value `json:"v"`
			}{c.value})
			if err != nil {
				t.Fatal(err)
			}
			if want := `{"v":` + c.wire + `}`; string(b) != want {
				t.Fatalf("marshal: %s, want %s", b, want)
			}
			var back struct {
				V api.Value `json:"v"`
			}
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back.V, c.value) || (back.V == nil) != (c.value == nil) {
				t.Fatalf("round trip: %q, want %q", back.V, c.value)
			}
		})
	}
}

func TestValueFromCurl(t *testing.T) {
	// What a person types: the value as JSON, kept byte for byte (spaces
	// included) as the workflow's input.
	var req api.StartRequest
	body := `{"workflow_id": "w", "workflow_type": "Order", "input": {"id": 7, "items": [1, 2]}, "memo": {"note": "rush"}}`
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	if string(req.Input) != `{"id": 7, "items": [1, 2]}` || string(req.Memo["note"]) != `"rush"` {
		t.Fatalf("input %s, memo %s", req.Input, req.Memo["note"])
	}
	for _, bad := range []string{
		`{"input": {"$base64": "not base64!"}}`,
		`{"input": {"$base64": 7}}`,
		`{"input": {"$base64": [1, null]}}`,
		`{"input": {"$base64": null}}`,
		`{"input": {"$base64": "AA\n=="}}`,
		`{"input": {"$document": {"id": "x", "size": 1}}}`,
	} {
		if err := json.Unmarshal([]byte(bad), &req); err == nil {
			t.Errorf("%s: decoded", bad)
		}
	}
}

func TestPayloadJSON(t *testing.T) {
	for _, c := range []struct {
		payload api.Payload
		wire    string
	}{
		{api.Payload{Data: []byte(`[1,2]`)}, `[1,2]`},
		{api.Payload{Data: []byte{0xff}}, `{"$base64":"/w=="}`},
		{api.Payload{Doc: &store.DocumentRef{ID: "abc", Size: 9}}, `{"$document":{"id":"abc","size":9}}`},
	} {
		b, err := json.Marshal(api.Event{ID: 1, Type: api.EventSignalReceived, Payload: c.payload})
		if err != nil {
			t.Fatal(err)
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(b, &fields); err != nil {
			t.Fatal(err)
		}
		if string(fields["payload"]) != c.wire {
			t.Errorf("payload %s, want %s", fields["payload"], c.wire)
		}
		var back api.Event
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(back.Payload.Data, c.payload.Data) || (back.Payload.Doc == nil) != (c.payload.Doc == nil) ||
			back.Payload.Doc != nil && *back.Payload.Doc != *c.payload.Doc {
			t.Errorf("round trip %+v, want %+v", back.Payload, c.payload)
		}
	}
	// An event without a payload has no payload field.
	b, _ := json.Marshal(api.Event{ID: 1, Type: api.EventTimerFired})
	if bytes.Contains(b, []byte("payload")) {
		t.Errorf("event without a payload: %s", b)
	}
}

// FuzzValueRoundTrip: any bytes travel as a Value and read back the same.
func FuzzValueRoundTrip(f *testing.F) {
	for _, seed := range []string{`{"id":7}`, "\x00\xff", `{"$base64":"AA=="}`, `{"$json":1}`, ` { "$base64" : "AA==" , "x" : 1 } `, `{"$document":{}}`, `"\/"`, ``} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := json.Marshal(struct {
			V api.Value `json:"v"`
		}{data})
		if err != nil {
			t.Fatalf("marshal %q: %v", data, err)
		}
		var back struct {
			V api.Value `json:"v"`
		}
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("unmarshal %s: %v", b, err)
		}
		// A JSON value reads back as an equal JSON value, written as
		// encoding/json writes a value a Marshaler returns: compacted,
		// with <, > and & in strings escaped.
		want := data
		if json.Valid(data) {
			var compact, escaped bytes.Buffer
			json.Compact(&compact, data)
			json.HTMLEscape(&escaped, compact.Bytes())
			want = escaped.Bytes()
		}
		if !bytes.Equal(back.V, want) {
			t.Fatalf("%q travelled as %s and read back as %q", data, b, back.V)
		}
	})
}
