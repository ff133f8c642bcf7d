package api

import (
	"errors"
	"testing"
)

// FuzzDecodeEvents: any bytes decode to gap-free events or to an error
// matching ErrCorruptHistory; never a panic.
func FuzzDecodeEvents(f *testing.F) {
	good, _ := EncodeEvents([]Event{{ID: 3, Type: EventStepScheduled, Seq: 1, Name: "x"}, {ID: 4, Type: EventWorkflowTaskCompleted}})
	f.Add(good, int64(3), int64(4))
	f.Add([]byte(`[{"id":1,"type":"WorkflowStarted"}]`), int64(1), int64(1))
	f.Add([]byte(`[{"id":2}]`), int64(1), int64(1))
	f.Add([]byte(`{`), int64(0), int64(-1))
	// Written before version 2: payloads in base64.
	f.Add([]byte(`[{"id":1,"type":"WorkflowStarted","payload":{"d":"eyJpZCI6N30="},"start":{"memo":{"n":"MQ=="}}}]`), int64(1), int64(1))
	f.Add([]byte(`v2[{"id":1,"type":"SignalReceived","payload":{"$base64":"/w=="}}]`), int64(1), int64(1))
	f.Fuzz(func(t *testing.T, data []byte, first, last int64) {
		evs, err := DecodeEvents(data, first, last)
		if err != nil {
			if !errors.Is(err, ErrCorruptHistory) {
				t.Fatalf("error %v is not ErrCorruptHistory", err)
			}
			return
		}
		for i, e := range evs {
			if e.ID != first+int64(i) || e.Type == "" {
				t.Fatalf("event %d: %+v", i, e)
			}
			_ = e.Summary()
		}
	})
}
