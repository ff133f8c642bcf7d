package engine_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// TestLargestRequestsFitTheStores starts a run whose every indexed field is
// as long as the API allows, in 4-byte characters (the most bytes a
// character takes), then lists it by its attributes and business key: every
// backend stores and indexes it (PostgreSQL refuses a btree entry over about
// 2.7 kB, which the limits must keep clear of).
func TestLargestRequestsFitTheStores(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		wide := func(n int) string { return strings.Repeat("𝕋", n) }
		typ := wide(store.MaxIndexedChars)
		e := newEnv(t, st, func(w *worker.Worker) {
			worker.RegisterWorkflowNamed(w, typ, func(ctx workflow.Context, _ string) (string, error) { return "done", nil })
		})
		ns := wide(store.MaxNamespaceChars)
		if _, err := e.eng.CreateNamespace(e.ctx, api.Namespace{Name: ns}); err != nil {
			t.Fatal(err)
		}
		attrs := map[string]string{}
		for i := range store.MaxAttributes {
			attrs[wide(store.MaxAttributeKey-2)+string(rune('a'+i%26))+string(rune('A'+i/26))] = wide(store.MaxAttributeValue)
		}
		if len(attrs) != store.MaxAttributes {
			t.Fatalf("%d attributes", len(attrs))
		}
		req := api.StartRequest{Namespace: ns, WorkflowID: wide(store.MaxIDChars), WorkflowType: typ, RequestID: wide(store.MaxIDChars),
			BusinessKey: wide(store.MaxIndexedChars), Attributes: attrs, Input: []byte(`""`)}
		if err := store.CheckLimits(&req); err != nil {
			t.Fatalf("the request is not within the limits: %v", err)
		}
		resp, err := e.eng.StartWorkflow(e.ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		c := client.New(e.eng, client.Options{Namespace: ns})
		w := worker.New(e.eng, worker.Options{Namespace: ns, Logger: logger()})
		worker.RegisterWorkflowNamed(w, typ, func(ctx workflow.Context, _ string) (string, error) { return "done", nil })
		if err := w.Start(e.ctx); err != nil {
			t.Fatal(err)
		}
		defer w.Stop(e.ctx)
		if out, err := client.GetRun[string](c, req.WorkflowID, resp.RunID).Get(e.ctx); err != nil || out != "done" {
			t.Fatalf("result %q, %v", out, err)
		}
		var firstKey string
		for k := range attrs {
			firstKey = k
			break
		}
		e.eventually("the run to be listed by attribute and business key", func() bool {
			page, err := c.List(e.ctx, api.ListRequest{BusinessKey: req.BusinessKey, Attributes: map[string]string{firstKey: attrs[firstKey]}})
			if err != nil {
				t.Fatal(err)
			}
			return len(page.Runs) == 1 && page.Runs[0].Status == store.StatusCompleted
		})
	})
}

// TestNULRefusedWhereStoresKeepText: a NUL in what a store keeps as text
// (a run's type, business key and attributes, a search filter) is refused
// at the call. On PostgreSQL such a start used to be acknowledged and its
// visibility write then retried for ever.
func TestNULRefusedWhereStoresKeepText(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		e := newEnv(t, st, func(w *worker.Worker) {})
		for name, req := range map[string]api.StartRequest{
			"workflow_type":     {WorkflowID: "a", WorkflowType: "t\x00t"},
			"business_key":      {WorkflowID: "b", WorkflowType: "t", BusinessKey: "k\x00k"},
			"attributes[x]":     {WorkflowID: "c", WorkflowType: "t", Attributes: map[string]string{"x": "v\x00v"}},
			"attributes[x\x00]": {WorkflowID: "d", WorkflowType: "t", Attributes: map[string]string{"x\x00": "v"}},
		} {
			_, err := e.eng.StartWorkflow(e.ctx, req)
			var ia *store.InvalidArgumentError
			if !errors.As(err, &ia) || ia.Field != name {
				t.Errorf("start with a NUL in %s: %v", name, err)
			}
		}
		if _, err := e.eng.ListWorkflows(e.ctx, api.ListRequest{BusinessKey: "k\x00"}); !errors.Is(err, api.ErrInvalidArgument) {
			t.Errorf("list with a NUL in the business key: %v", err)
		}
		for _, req := range []api.ListRequest{{WorkflowIDPrefix: "k\x00"}, {WorkflowIDPrefix: "k\xff"},
			{BusinessKeyPrefix: "a\x00"}, {WorkflowIDPrefix: strings.Repeat("p", 251)}} {
			if _, err := e.eng.ListWorkflows(e.ctx, req); !errors.Is(err, api.ErrInvalidArgument) {
				t.Errorf("list %+v: %v", req, err)
			}
		}
		if n, err := e.eng.CountWorkflows(e.ctx, api.ListRequest{}); err != nil || n != 0 {
			t.Errorf("count %d, %v: a refused start left a run", n, err)
		}
	})
}
