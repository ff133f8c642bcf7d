package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/server"
	"github.com/strandhq/strand/store"
)

// streamServer serves an engine on a SQLite file with task streams; its
// drain ends the long polls and the streams as a server that shuts down.
func streamServer(t *testing.T) (eng *engine.Engine, url string, drain func()) {
	t.Helper()
	eng = sqliteEngine(t, engine.Options{})
	draining, drain := context.WithCancel(context.Background())
	t.Cleanup(drain)
	srv := httptest.NewServer(server.New(eng, server.Options{PollWait: 2 * time.Second, Draining: draining}))
	t.Cleanup(srv.Close)
	return eng, srv.URL, drain
}

// dialStream opens a task stream of namespace default.
func dialStream(t *testing.T, ctx context.Context, url string) *websocket.Conn {
	t.Helper()
	conn, _, err := websocket.Dial(ctx, url+"/api/v1/namespaces/default/task-stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	return conn
}

func sendFrame(t *testing.T, ctx context.Context, conn *websocket.Conn, frame string) {
	t.Helper()
	if err := conn.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
		t.Fatal(err)
	}
}

// readAnswers reads the stream's next message.
func readAnswers(t *testing.T, ctx context.Context, conn *websocket.Conn) []server.StreamAnswer {
	t.Helper()
	_, data, err := conn.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var msg server.StreamAnswers
	if err := json.Unmarshal(data, &msg); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	return msg.Answers
}

// TestTaskStream: a task stream serves exchanges as POSTs of them are
// served, answers each by its id, ends a waiting one when told, refuses a
// malformed message by closing with its reason, and closes with "going
// away" once a draining server answered what was in flight.
func TestTaskStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eng, url, drain := streamServer(t)

	// A GET that is no upgrade is told what the route is.
	resp, err := http.Get(url + "/api/v1/namespaces/default/task-stream")
	if err != nil {
		t.Fatal(err)
	}
	var e server.Error
	json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired || !strings.Contains(e.Message, "WebSocket") {
		t.Errorf("a plain GET: %d %+v; want 426 that says it is a WebSocket", resp.StatusCode, e)
	}

	conn := dialStream(t, ctx, url)
	// Exchange 7 waits for a workflow task; 8 takes none at once, and is
	// answered first.
	sendFrame(t, ctx, conn, `{"requests":[{"id":7,"exchange":{"takes":[{"kind":"workflow","max":5}],"wait":true}},{"id":8,"exchange":{"takes":[{"kind":"step","max":1}]}}]}`)
	if a := readAnswers(t, ctx, conn); len(a) != 1 || a[0].ID != 8 || a[0].Answer == nil || len(a[0].Answer.Taken) != 1 {
		t.Fatalf("first answers: %+v; want exchange 8's, with nothing taken", a)
	}
	if _, err := eng.StartWorkflow(ctx, api.StartRequest{WorkflowID: "s1", WorkflowType: "T"}); err != nil {
		t.Fatal(err)
	}
	a := readAnswers(t, ctx, conn)
	if len(a) != 1 || a[0].ID != 7 || a[0].Answer == nil || len(a[0].Answer.Taken[0].WorkflowTasks) != 1 || a[0].Answer.Taken[0].WorkflowTasks[0].Run.WorkflowID != "s1" {
		t.Fatalf("exchange 7: %+v; want s1's workflow task", a)
	}
	// A report with the task's token lands; an exchange the server refuses
	// as a POST of it is refused alike, with its status.
	tok, _ := json.Marshal(a[0].Answer.Taken[0].WorkflowTasks[0].Token)
	sendFrame(t, ctx, conn, `{"requests":[{"id":9,"exchange":{"complete_workflow_tasks":[{"token":`+string(tok)+`,"commands":[{"type":"CompleteWorkflow","seq":1}]}]}},{"id":10,"exchange":{"takes":[{"kind":"timer","max":1}]}}]}`)
	got := map[uint64]server.StreamAnswer{}
	for len(got) < 2 {
		for _, a := range readAnswers(t, ctx, conn) {
			got[a.ID] = a
		}
	}
	if a := got[9]; a.Answer == nil || len(a.Answer.CompleteWorkflowTasks) != 1 || a.Answer.CompleteWorkflowTasks[0].Err() != nil {
		t.Errorf("the completion: %+v", a)
	}
	if a := got[10]; a.Status != http.StatusBadRequest || a.Error == nil || a.Error.Field != "takes[0].kind" {
		t.Errorf("a take of an unknown kind: %+v; want 400 naming the field", a)
	}
	if d, err := eng.DescribeWorkflow(ctx, api.RunRef{WorkflowID: "s1"}); err != nil || d.Status != store.StatusCompleted {
		t.Errorf("s1: %+v, %v; want completed by the report on the stream", d.Status, err)
	}

	// A waiting exchange told to end answers at once, long before the
	// poll wait.
	begun := time.Now()
	sendFrame(t, ctx, conn, `{"requests":[{"id":11,"exchange":{"takes":[{"kind":"step","max":1}],"wait":true}}]}`)
	sendFrame(t, ctx, conn, `{"requests":[{"id":11,"cancel":true}]}`)
	if a := readAnswers(t, ctx, conn); len(a) != 1 || a[0].ID != 11 || time.Since(begun) > time.Second {
		t.Errorf("a canceled wait: %+v after %s", a, time.Since(begun))
	}

	// Draining: the exchange waiting answers, then the stream closes.
	sendFrame(t, ctx, conn, `{"requests":[{"id":12,"exchange":{"takes":[{"kind":"step","max":1}],"wait":true}}]}`)
	time.Sleep(50 * time.Millisecond) // let the exchange begin waiting (it answers either way)
	drain()
	if a := readAnswers(t, ctx, conn); len(a) != 1 || a[0].ID != 12 {
		t.Errorf("draining: %+v; want exchange 12's answer", a)
	}
	if _, _, err := conn.Read(ctx); websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Errorf("after the drain: %v; want the stream closed, going away", err)
	}

	// Malformed messages close the stream with their reason.
	_, url, _ = streamServer(t)
	for frame, reason := range map[string]string{
		`{"requests":[{"id":1}]}`:                    "without an exchange",
		`{"requests":[],"nope":1}`:                   "nope",
		`{"requests":[{"id":1,"exchange":{"x":1}}]}`: "x",
		`[1,2]`: "JSON object",
	} {
		conn := dialStream(t, ctx, url)
		sendFrame(t, ctx, conn, frame)
		_, _, err := conn.Read(ctx)
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.StatusInvalidFramePayloadData || !strings.Contains(ce.Reason, reason) {
			t.Errorf("%s: %v; want closed as invalid, saying %q", frame, err, reason)
		}
	}
}
