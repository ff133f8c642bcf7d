package engine_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/store/sqlite"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// The V1 workflows are those that wrote testdata/v1-payloads with the
// Strand before payloads became JSON values on the wire and in storage
// (commit b6ff4ad): "order-done" ran to its end; "order-open" and
// "order-document" (whose input is a document) wait for their signal.

type V1Order struct {
	ID    int    `json:"id"`
	Notes string `json:"notes,omitempty"`
}

type V1Receipt struct {
	ID       int    `json:"id"`
	Approval string `json:"approval"`
	Charge   string `json:"charge"`
	Shipped  string `json:"shipped"`
}

func V1Charge(ctx context.Context, id int) (string, error) { return "charged-" + strconv.Itoa(id), nil }

func V1Ship(ctx workflow.Context, id int) (string, error) { return "shipped-" + strconv.Itoa(id), nil }

func V1OrderFlow(ctx workflow.Context, in V1Order) (V1Receipt, error) {
	approval, _ := workflow.GetSignalChannel[string](ctx, "approve").Receive(ctx)
	charge, err := workflow.ExecuteStep(ctx, workflow.StepOptions{}, V1Charge, in.ID).Get(ctx)
	if err != nil {
		return V1Receipt{}, err
	}
	shipped, err := workflow.ExecuteChild(ctx, workflow.ChildOptions{}, V1Ship, in.ID).Get(ctx)
	if err != nil {
		return V1Receipt{}, err
	}
	return V1Receipt{ID: in.ID, Approval: approval, Charge: charge, Shipped: shipped}, nil
}

func TestStoreWrittenBeforeJSONPayloads(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"strand.db", "strand.db-visibility"} {
		gunzip(t, filepath.Join("testdata", "v1-payloads", name+".gz"), filepath.Join(dir, name))
	}
	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(dir, "strand.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, _, err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The runs closed when testdata was written (2026-11-25), and the
	// default namespace keeps closed runs 72 hours: their retention has
	// passed, and the purge would delete order-done while the test reads
	// it. The purge waits, held at its first look at the store, until
	// the test ends: what is tested is the reading of an old store.
	var opts engine.Options
	engine.SetPurgeKnobs(&opts, nil, func(ctx context.Context, _ int32) { <-ctx.Done() })
	e := newEnvWith(t, st, opts, func(w *worker.Worker) {
		worker.RegisterWorkflow(w, V1OrderFlow)
		worker.RegisterWorkflow(w, V1Ship)
		worker.RegisterStep(w, V1Charge)
	})

	// The finished run's history reads with its payloads as JSON values.
	evs := e.history("order-done", "")
	wire, err := json.Marshal(evs)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"payload":{"id":1}`, `"memo":{"note":"rush"}`, `"payload":"yes"`, `"payload":"charged-1"`,
		`"payload":{"id":1,"approval":"yes","charge":"charged-1","shipped":"shipped-1"}`} {
		if !bytes.Contains(wire, []byte(want)) {
			dump(t, evs)
			t.Fatalf("history lacks %s", want)
		}
	}
	done, err := client.GetRun[V1Receipt](e.c, "order-done", "").Get(e.ctx)
	if err != nil || done != (V1Receipt{1, "yes", "charged-1", "shipped-1"}) {
		t.Fatalf("order-done: %+v, %v", done, err)
	}

	// The open runs replay their stored history and go on.
	d, err := e.c.Describe(e.ctx, "order-open", "")
	if err != nil || string(d.Memo["note"]) != `"rush"` {
		t.Fatalf("describe order-open: memo %q, %v", d.Memo["note"], err)
	}
	page, err := e.eng.GetHistory(e.ctx, api.HistoryRequest{RunRef: api.RunRef{WorkflowID: "order-document"}})
	if err != nil {
		t.Fatal(err)
	}
	if first := page.Events[0].Payload; first.Doc == nil {
		t.Fatalf("order-document's input is not a document: %d bytes inline", len(first.Data))
	}
	for i, id := range []string{"order-open", "order-document"} {
		if err := e.c.Signal(e.ctx, id, "", "approve", "later"); err != nil {
			t.Fatal(err)
		}
		got, err := client.GetRun[V1Receipt](e.c, id, "").Get(e.ctx)
		n := i + 2
		if want := (V1Receipt{n, "later", "charged-" + strconv.Itoa(n), "shipped-" + strconv.Itoa(n)}); err != nil || got != want {
			t.Fatalf("%s: %+v, %v; want %+v", id, got, err, want)
		}
	}
	// The document input resolves to its bytes.
	hist, err := e.eng.GetHistory(e.ctx, api.HistoryRequest{RunRef: api.RunRef{WorkflowID: "order-document"}, Resolve: true})
	if err != nil {
		t.Fatal(err)
	}
	var in V1Order
	if err := json.Unmarshal(hist.Events[0].Payload.Data, &in); err != nil || in.ID != 3 || in.Notes != strings.Repeat("n", 300<<10) {
		t.Fatalf("resolved input: id %d, %d bytes of notes, %v", in.ID, len(in.Notes), err)
	}
}

func gunzip(t *testing.T, from, to string) {
	t.Helper()
	f, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := io.Copy(out, zr); err != nil {
		t.Fatal(err)
	}
}
