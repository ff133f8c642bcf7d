package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/server"
)

// FuzzRequests sends arbitrary bodies to the API's routes: every answer is
// below 500, and every error is JSON with a code.
func FuzzRequests(f *testing.F) {
	eng, err := engine.Open(context.Background(), testdb.SQLite(f), engine.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { eng.Close() })
	h := server.New(eng, server.Options{MaxBody: 1 << 16})
	paths := []string{
		"/api/v1/namespaces/default/workflows",
		"/api/v1/namespaces/default/workflows/w/signals",
		"/api/v1/namespaces/default/workflows/w/signal-with-start",
		"/api/v1/namespaces/default/workflows/w/cancel",
		"/api/v1/namespaces/default/workflows/w/terminate",
		"/api/v1/namespaces/default/workflow-search",
		"/api/v1/workflow-tasks/complete",
		"/api/v1/workflow-tasks/fail",
		"/api/v1/step-tasks/complete",
		"/api/v1/step-tasks/fail",
		"/api/v1/step-tasks/heartbeat",
		"/api/v1/queries/answer",
	}
	f.Add(uint8(0), []byte(`{"workflow_id":"a","workflow_type":"T"}`))
	f.Add(uint8(0), []byte(`{"workflow_id":"","priority":-3}`))
	f.Add(uint8(1), []byte(`{"name":"s","input":"e30="}`))
	f.Add(uint8(6), []byte(`{"token":"eyJydW4iOnt9fQ==","commands":[{"type":"CompleteWorkflow"}]}`))
	f.Add(uint8(8), []byte(`{"token":"bnVsbA=="}`))
	f.Add(uint8(5), []byte(`{"statuses":[9],"page_size":-1}`))
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		path := paths[int(route)%len(paths)]
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
		if rec.Code >= 500 {
			t.Fatalf("%s %q: status %d: %s", path, body, rec.Code, rec.Body.String())
		}
		if rec.Code >= 400 {
			var e server.Error
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Code == "" || e.Message == "" {
				t.Fatalf("%s %q: status %d without a JSON error: %s", path, body, rec.Code, rec.Body.String())
			}
		}
	})
}
