// Command testworker is a worker process for the black-box tests: it runs
// a few workflows and steps against a Strand server until it is stopped.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/strandhq/strand/remote"
	"github.com/strandhq/strand/statemachine"
	"github.com/strandhq/strand/step"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// Approval waits for an "approve" signal, then shouts who approved in a step.
func Approval(ctx workflow.Context, item string) (string, error) {
	workflow.SetQueryHandler(ctx, "item", func(struct{}) (string, error) { return item, nil })
	who, _ := workflow.GetSignalChannel[string](ctx, "approve").Receive(ctx)
	loud, err := workflow.ExecuteStep(ctx, workflow.StepOptions{}, Shout, who).Get(ctx)
	if err != nil {
		return "", err
	}
	return item + " approved by " + loud, nil
}

// Patient runs Nap, which a killed worker leaves unfinished: its
// start-to-close timeout hands it to another worker.
func Patient(ctx workflow.Context, _ struct{}) (string, error) {
	return workflow.ExecuteStep(ctx, workflow.StepOptions{StartToClose: 2 * time.Second}, Nap, 0).Get(ctx)
}

// Nap says it started, then takes its time on the first attempt.
func Nap(ctx context.Context, _ int) (string, error) {
	if step.GetInfo(ctx).Attempt == 1 {
		fmt.Println("nap started")
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(time.Minute):
		}
	}
	return fmt.Sprintf("rested on attempt %d", step.GetInfo(ctx).Attempt), nil
}

// Chores is the restart test's workload: four steps, with a durable
// sleep and a signal ("go") before the third.
func Chores(ctx workflow.Context, id string) (int, error) {
	opts := workflow.StepOptions{StartToClose: 20 * time.Second}
	n := 0
	for i := range 4 {
		if i == 2 {
			if err := workflow.Sleep(ctx, 200*time.Millisecond); err != nil {
				return 0, err
			}
			workflow.GetSignalChannel[string](ctx, "go").Receive(ctx)
		}
		v, err := workflow.ExecuteStep(ctx, opts, Chore, fmt.Sprintf("%s/%d", id, i)).Get(ctx)
		if err != nil {
			return 0, err
		}
		n += v
	}
	return n, nil
}

// effects is where Chore records each run of itself (--effects).
var effects struct {
	sync.Mutex
	f *os.File
}

// Chore records that it started (with its attempt and whether it was
// redelivered) and, 10 to 60 ms later, that it ended, each line synced
// to disk before it goes on: the side effect the restart test counts.
func Chore(ctx context.Context, key string) (int, error) {
	info := step.GetInfo(ctx)
	if err := record(fmt.Sprintf("start %s %d %t %d", key, info.Attempt, info.Redelivered, time.Now().UnixNano())); err != nil {
		return 0, err
	}
	time.Sleep(time.Duration(10+rand.IntN(50)) * time.Millisecond)
	if err := record(fmt.Sprintf("end %s %d", key, time.Now().UnixNano())); err != nil {
		return 0, err
	}
	return 1, nil
}

func record(line string) error {
	effects.Lock()
	defer effects.Unlock()
	if effects.f == nil {
		return nil
	}
	if _, err := effects.f.WriteString(line + "\n"); err != nil {
		return err
	}
	return effects.f.Sync()
}

// Nightly is a scheduled job: it processes the day its fire time names.
func Nightly(ctx workflow.Context, _ struct{}) (string, error) {
	return "processed " + workflow.ScheduledTime(ctx).Format(time.DateOnly), nil
}

// AwaitMessage waits for the message of a name and correlation key and
// returns its payload.
func AwaitMessage(ctx workflow.Context, in struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}) (json.RawMessage, error) {
	return workflow.Receive[json.RawMessage](ctx, in.Name, in.Key).Get(ctx)
}

// AskApproval asks the finance group to approve with a budget and returns
// the outcome, who decided and the budget.
func AskApproval(ctx workflow.Context, title string) (string, error) {
	out, err := workflow.HumanTask(ctx, workflow.HumanTaskOptions{Title: title, Description: "A purchase waits for finance.",
		Groups: []string{"finance"}, Outcomes: []string{"approve", "reject"}, Priority: 2,
		Form: json.RawMessage(`{"type": "object", "required": ["budget"], "properties": {"budget": {"type": "string", "title": "Budget"}}}`)}).Get(ctx)
	if err != nil {
		return "", err
	}
	var form struct {
		Budget string `json:"budget"`
	}
	if err := json.Unmarshal(out.Data, &form); err != nil {
		return "", err
	}
	return out.Outcome + " by " + out.By + ", budget " + form.Budget, nil
}

// delivery is a state machine whose "deliver" state records its runs in
// the effects file and takes the variable "sleep" to finish.
func delivery() *statemachine.Definition {
	return statemachine.Define("delivery", "A parcel is delivered").
		Start("deliver", "The courier drives", func(ctx statemachine.Context) (statemachine.Next, error) {
			if err := record("deliver " + ctx.Instance()); err != nil {
				return statemachine.Next{}, err
			}
			sleep, _ := ctx.Var("sleep")
			d, _ := time.ParseDuration(sleep)
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return statemachine.Next{}, ctx.Err()
			}
			return statemachine.MoveTo("delivered", "handed over"), nil
		}).
		End("delivered", "The parcel arrived").
		Error("error", "Delivery failed: a person looks at it").
		Permit("deliver", "delivered")
}

// creditApplication is nFlow's example, for the console's state machine
// pages: an application is recorded, waits in a manual state for a person,
// then a loan is granted (its variable "loanFails" set: it fails, and once
// its retry is spent the instance goes to the error state) or the
// application rejected; either way it is finished and done.
func creditApplication() *statemachine.Definition {
	return statemachine.Define("creditApplication", "A credit application: recorded, accepted by a person, granted or rejected").
		Start("createCreditApplication", "The application is recorded", func(ctx statemachine.Context) (statemachine.Next, error) {
			ctx.SetVar("applicationId", "CA-"+ctx.ExternalID())
			return statemachine.MoveTo("acceptCreditApplication", "waiting for acceptance"), nil
		}).
		Manual("acceptCreditApplication", "A person accepts or rejects the application").
		Normal("grantLoan", "The loan is granted", func(ctx statemachine.Context) (statemachine.Next, error) {
			if v, _ := ctx.Var("loanFails"); v != "" {
				return statemachine.Next{}, fmt.Errorf("the bank refused: %s", v)
			}
			amount, _ := ctx.Var("amount")
			ctx.SetVar("loanId", "L-"+ctx.ExternalID())
			ctx.SetVar("granted", amount)
			return statemachine.MoveTo("finishCreditApplication", "loan granted"), nil
		}).
		Normal("rejectCreditApplication", "The application is rejected", func(ctx statemachine.Context) (statemachine.Next, error) {
			ctx.SetVar("rejected", "true")
			return statemachine.MoveTo("finishCreditApplication", "rejected"), nil
		}).
		Normal("finishCreditApplication", "The customer is told", func(ctx statemachine.Context) (statemachine.Next, error) {
			ctx.SetVar("notified", "true")
			return statemachine.MoveTo("done", "customer notified"), nil
		}).
		End("done", "The application is closed").
		Error("error", "Something failed: a person looks at it").
		Permit("createCreditApplication", "acceptCreditApplication").
		Permit("acceptCreditApplication", "grantLoan").
		Permit("acceptCreditApplication", "rejectCreditApplication").
		Permit("grantLoan", "finishCreditApplication", "error").
		Permit("rejectCreditApplication", "finishCreditApplication").
		Permit("finishCreditApplication", "done").
		Retry("grantLoan", 1, 100*time.Millisecond, time.Second)
}

// Invoice renders an invoice for a customer in a step; the workflow and
// the step attach audit details, the step's log past the document
// threshold.
func Invoice(ctx workflow.Context, customer string) (string, error) {
	if err := workflow.AuditDetail(ctx, "plan", map[string]any{"customer": customer, "format": "pdf"}); err != nil {
		return "", err
	}
	return workflow.ExecuteStep(ctx, workflow.StepOptions{}, Render, customer).Get(ctx)
}

// Render attaches the request it would send and the log it would write.
func Render(ctx context.Context, customer string) (string, error) {
	if err := step.AuditDetail(ctx, "request", map[string]any{"customer": customer, "lines": 3, "total": "129.00 EUR"}); err != nil {
		return "", err
	}
	var log strings.Builder
	for i := 1; log.Len() < 300<<10; i++ {
		fmt.Fprintf(&log, "page %d of the invoice for %s rendered\n", i, customer)
	}
	if err := step.AuditDetail(ctx, "log", log.String()); err != nil {
		return "", err
	}
	return "invoice-" + customer + ".pdf", nil
}

// Shout upper-cases its input.
func Shout(ctx context.Context, s string) (string, error) { return strings.ToUpper(s), nil }

func main() {
	server := flag.String("server", "http://127.0.0.1:8233", "the server's URL")
	effectsPath := flag.String("effects", "", "a file to which Chore appends a line as it starts and ends")
	identity := flag.String("identity", "", "the worker's identity (default host:pid)")
	smNamespaces := flag.String("sm-namespaces", "default", "the namespaces (comma-separated) whose state machine instances the worker runs")
	sagaNamespaces := flag.String("saga-namespaces", "default", "the namespaces (comma-separated) whose Trip sagas the worker runs")
	flag.Parse()
	if *effectsPath != "" {
		f, err := os.OpenFile(*effectsPath, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer f.Close()
		effects.f = f
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	svc := remote.New(*server, nil)
	w := worker.New(svc, worker.Options{Identity: *identity, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	// The state machines' executor group is a queue of its own: the tests'
	// servers run other workers on the default queue.
	var machines []*worker.Worker
	for _, ns := range strings.Split(*smNamespaces, ",") {
		m := worker.New(svc, worker.Options{Namespace: strings.TrimSpace(ns), Queue: "statemachines", Identity: *identity,
			Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
		if err := statemachine.Register(ctx, m, svc, delivery(), creditApplication()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := m.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		machines = append(machines, m)
	}
	worker.RegisterWorkflow(w, Approval)
	worker.RegisterStep(w, Shout)
	worker.RegisterWorkflow(w, Patient)
	worker.RegisterStep(w, Nap)
	worker.RegisterWorkflow(w, Chores)
	worker.RegisterStep(w, Chore)
	worker.RegisterWorkflow(w, Nightly)
	worker.RegisterWorkflow(w, AwaitMessage)
	worker.RegisterWorkflow(w, AskApproval)
	worker.RegisterWorkflow(w, Invoice)
	worker.RegisterStep(w, Render)
	// The Trip saga runs on a queue of its own, as the state machines do.
	for _, ns := range strings.Split(*sagaNamespaces, ",") {
		trips := worker.New(svc, worker.Options{Namespace: strings.TrimSpace(ns), Queue: "sagas", Identity: *identity,
			Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
		registerTrip(trips)
		if err := trips.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		machines = append(machines, trips)
	}
	if err := w.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("worker started")
	<-ctx.Done()
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	if err := w.Stop(sctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	for _, m := range machines {
		if err := m.Stop(sctx); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
}
