package workflow_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/step"
	"github.com/strandhq/strand/store/sqlite"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// Quote prices an order in a step; it records why it chose its carrier.
func Quote(ctx workflow.Context, order string) (string, error) {
	price, err := workflow.ExecuteStep(ctx, workflow.StepOptions{}, AskCarrier, order).Get(ctx)
	if err != nil {
		return "", err
	}
	if err := workflow.AuditDetail(ctx, "decision", map[string]string{"carrier": "north", "why": "cheapest"}); err != nil {
		return "", err
	}
	return price, nil
}

// AskCarrier asks a carrier for a price; it keeps the request it sent and
// the carrier's (long) answer.
func AskCarrier(ctx context.Context, order string) (string, error) {
	if err := step.AuditDetail(ctx, "request", map[string]string{"order": order, "to": "north"}); err != nil {
		return "", err
	}
	answer := strings.Repeat("north carrier rate table line\n", 10000) // 300 KB: kept as a document
	if err := step.AuditDetail(ctx, "answer", answer); err != nil {
		return "", err
	}
	return "12.50 EUR", nil
}

// Audit details on an embedded engine: the history names them under their
// events; small ones are inline, a large one is a document that a history
// read loads only when asked (ResolveDetails; `strand workflow history
// --details`).
func ExampleAuditDetail() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "strand-audit-example")
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(dir, "strand.db")})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	if _, _, err := st.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	eng, err := engine.Open(ctx, st, engine.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	w := worker.New(eng, worker.Options{})
	worker.RegisterWorkflow(w, Quote)
	worker.RegisterStep(w, AskCarrier)
	if err := w.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer w.Stop(context.Background())

	c := client.New(eng, client.Options{})
	run, err := client.Start(ctx, c, Quote, "order-9", client.StartOptions{ID: "quote-9"})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := run.Get(ctx); err != nil {
		log.Fatal(err)
	}
	// A history read names the large detail's document...
	events, err := c.AllHistory(ctx, "quote-9", "")
	if err != nil {
		log.Fatal(err)
	}
	for _, ev := range events {
		for _, d := range ev.Details {
			if d.Value.Doc != nil {
				fmt.Printf("%s %s: a document of %d bytes\n", ev.Type, d.Name, d.Value.Doc.Size)
			} else {
				fmt.Printf("%s %s: %s\n", ev.Type, d.Name, d.Value.Data)
			}
		}
	}
	// ...and loads it when asked to.
	page, err := eng.GetHistory(ctx, api.HistoryRequest{RunRef: api.RunRef{WorkflowID: "quote-9"}, ResolveDetails: true})
	if err != nil {
		log.Fatal(err)
	}
	for _, ev := range page.Events {
		for _, d := range ev.Details {
			if d.Name == "answer" {
				fmt.Printf("answer: %.37s...\n", d.Value.Data)
			}
		}
	}
	// Output:
	// StepCompleted request: {"order":"order-9","to":"north"}
	// StepCompleted answer: a document of 310002 bytes
	// WorkflowTaskCompleted decision: {"carrier":"north","why":"cheapest"}
	// answer: "north carrier rate table line\nnorth...
}
