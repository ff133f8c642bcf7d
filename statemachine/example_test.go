package statemachine_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/strandhq/strand/engine"
	sm "github.com/strandhq/strand/statemachine"
	"github.com/strandhq/strand/store/sqlite"
	"github.com/strandhq/strand/worker"
)

// loan is a small credit process: a person decides between the two
// automatic steps.
func loan() *sm.Definition {
	return sm.Define("loan", "A loan application").
		Start("apply", "The application is recorded", func(ctx sm.Context) (sm.Next, error) {
			ctx.SetVar("reference", "L-"+ctx.ExternalID())
			return sm.MoveTo("decide", "waiting for a decision"), nil
		}).
		Manual("decide", "A person approves or rejects").
		Normal("payOut", "The money is paid", func(ctx sm.Context) (sm.Next, error) {
			amount, _, err := sm.GetVar[int](ctx, "amount")
			if err != nil {
				return sm.Next{}, err // retried with back-off, then the error state
			}
			ctx.SetVar("paid", fmt.Sprint(amount))
			return sm.MoveTo("done", "paid out"), nil
		}).
		End("done", "Finished").
		End("rejected", "Rejected").
		Error("error", "Needs a person").
		Permit("apply", "decide").
		Permit("decide", "payOut").
		Permit("decide", "rejected").
		Permit("payOut", "done").
		Retry("payOut", 3, time.Second, time.Minute)
}

// A state machine on an embedded engine: created, decided by an update
// from outside, paid out; each action with the variables it set.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "strand-sm-example")
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

	// The worker runs the methods; registering stores the definition.
	w := worker.New(eng, worker.Options{})
	if err := sm.Register(ctx, w, eng, loan()); err != nil {
		log.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer w.Stop(context.Background())

	c := sm.NewClient(eng, "")
	id, err := c.Create(ctx, sm.CreateRequest{Type: "loan", ExternalID: "7", Vars: map[string]string{"amount": "2500"}})
	if err != nil {
		log.Fatal(err)
	}
	wait := func(status sm.Status) *sm.Instance {
		for {
			inst, err := c.Get(ctx, id)
			if err != nil {
				log.Fatal(err)
			}
			if inst.Status == status {
				return inst
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	inst := wait(sm.StatusManual)
	fmt.Println(inst.ID, "waits in", inst.State)

	// A person approves: an external change moves it on.
	if err := c.Update(ctx, id, sm.Update{State: "payOut", Reason: "approved", Identity: "alice"}); err != nil {
		log.Fatal(err)
	}
	inst = wait(sm.StatusFinished)
	for _, a := range inst.Actions {
		fmt.Println(a.ID, a.Type, a.State, a.Text, a.Updated)
	}
	fmt.Println("after action 1:", inst.VarsAfter(1))
	// Output:
	// loan/7 waits in decide
	// 1 stateExecution apply waiting for a decision map[reference:L-7]
	// 2 externalChange payOut approved map[]
	// 3 stateExecution payOut paid out map[paid:2500]
	// after action 1: map[amount:2500 reference:L-7]
}
