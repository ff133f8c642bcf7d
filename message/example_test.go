package message_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/message"
	"github.com/strandhq/strand/store/sqlite"
	"github.com/strandhq/strand/system"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// Payment is what the payment service says about an order.
type Payment struct {
	Amount int `json:"amount"`
}

// Checkout waits for the payment of its order, found by the order number
// alone: the payment service knows no workflow id.
func Checkout(ctx workflow.Context, orderNo string) (string, error) {
	paid, err := workflow.Receive[Payment](ctx, "payment-confirmed", orderNo).Get(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s paid %d EUR", orderNo, paid.Amount), nil
}

// Refund is started by a message under a rule: its workflow id is the
// message's correlation key, its input the message's payload.
func Refund(ctx workflow.Context, p Payment) (string, error) {
	return fmt.Sprintf("refund %d EUR for %s", p.Amount, workflow.GetInfo(ctx).WorkflowID), nil
}

// Messages on an embedded engine: one sent before its run waits, and one
// that starts a run.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "strand-message-example")
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

	// The mailboxes are system workflows: the system runner runs them
	// (strand server runs one on every node).
	sys := system.NewRunner(eng, system.RunnerOptions{})
	if err := sys.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer sys.Stop(context.Background())
	w := worker.New(eng, worker.Options{})
	worker.RegisterWorkflow(w, Checkout)
	worker.RegisterWorkflow(w, Refund)
	if err := w.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer w.Stop(context.Background())
	c := client.New(eng, client.Options{Identity: "payments"})

	// The payment arrives before the checkout waits for it: it is kept.
	if _, err := c.SendMessage(ctx, "payment-confirmed", "order-1042", Payment{Amount: 120}, client.MessageOptions{}); err != nil {
		log.Fatal(err)
	}
	run, err := client.Start(ctx, c, Checkout, "order-1042", client.StartOptions{ID: "checkout-1042"})
	if err != nil {
		log.Fatal(err)
	}
	out, err := run.Get(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)

	// A refund request that no run waits for starts a Refund.
	rule := api.MessageRule{MessageRuleRef: api.MessageRuleRef{Name: "refund-requested"}, WorkflowType: "Refund"}
	if err := message.NewService(eng).PutMessageRule(ctx, rule); err != nil {
		log.Fatal(err)
	}
	if _, err := c.SendMessage(ctx, "refund-requested", "refund-1042", Payment{Amount: 120}, client.MessageOptions{}); err != nil {
		log.Fatal(err)
	}
	// The mailbox starts the run a moment after it took the message.
	for {
		out, err := client.GetRun[string](c, "refund-1042", "").Get(ctx)
		if errors.Is(err, api.ErrNotFound) {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(out)
		break
	}
	// Output:
	// order-1042 paid 120 EUR
	// refund 120 EUR for refund-1042
}
