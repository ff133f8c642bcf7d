package api_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// legacyBlock is a history block as Strand wrote it before payloads became
// JSON values: payloads as {"d": base64} or {"doc": ref}, memo values and
// failure details as base64 strings.
const legacyBlock = `[
{"id":1,"type":"WorkflowStarted","time":"2026-01-01T00:00:00Z","name":"Order","payload":{"d":"eyJpZCI6N30="},
 "start":{"queue":"q","memo":{"note":"InJ1c2gi"},"attributes":{"a":"b"}}},
{"id":2,"type":"StepFailed","time":"2026-01-01T00:00:01Z","seq":1,"name":"charge",
 "failure":{"kind":"application","message":"declined","details":"WzFd","cause":{"kind":"application","message":"card","details":"/w=="}}},
{"id":3,"type":"ChildInitiated","time":"2026-01-01T00:00:02Z","seq":2,"name":"Ship",
 "payload":{"doc":{"id":"abc","size":9}},"child":{"options":{"workflow_id":"c","memo":{"k":"MQ=="}}}}
]`

func TestDecodeEventsWrittenBeforeVersion2(t *testing.T) {
	events, err := api.DecodeEvents([]byte(legacyBlock), 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []api.Event{
		{ID: 1, Type: api.EventWorkflowStarted, Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Name: "Order",
			Payload: api.Payload{Data: []byte(`{"id":7}`)},
			Start:   &api.StartAttrs{Queue: "q", Memo: map[string]api.Value{"note": api.Value(`"rush"`)}, Attributes: map[string]string{"a": "b"}}},
		{ID: 2, Type: api.EventStepFailed, Time: time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC), Seq: 1, Name: "charge",
			Failure: &api.Failure{Kind: "application", Message: "declined", Details: api.Value(`[1]`),
				Cause: &api.Failure{Kind: "application", Message: "card", Details: api.Value{0xff}}}},
		{ID: 3, Type: api.EventChildInitiated, Time: time.Date(2026, 1, 1, 0, 0, 2, 0, time.UTC), Seq: 2, Name: "Ship",
			Payload: api.Payload{Doc: &store.DocumentRef{ID: "abc", Size: 9}},
			Child:   &api.ChildAttrs{Options: api.ChildOptions{WorkflowID: "c", Memo: map[string]api.Value{"k": api.Value(`1`)}}}},
	}
	if g, w := mustJSON(t, events), mustJSON(t, want); !bytes.Equal(g, w) {
		t.Fatalf("decoded\n%s\nwant\n%s", g, w)
	}
	// Written again, the block is in the new form and reads back the same.
	enc, err := api.EncodeEvents(events)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(enc, []byte("v2[")) || !bytes.Contains(enc, []byte(`"payload":{"id":7}`)) {
		t.Fatalf("encoded: %s", enc)
	}
	again, err := api.DecodeEvents(enc, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := mustJSON(t, again), mustJSON(t, want); !bytes.Equal(g, w) {
		t.Fatalf("decoded again\n%s\nwant\n%s", g, w)
	}
}

func TestUnmarshalStoredRefusesABadLegacyPayload(t *testing.T) {
	for _, data := range []string{
		`{"kind":"application","message":"m","details":"not base64!"}`,
		`{"kind":"application","message":"m","details":7}`,
	} {
		var f api.Failure
		if err := api.UnmarshalStored([]byte(data), &f); err == nil {
			t.Errorf("%s: decoded to %+v", data, f)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}
