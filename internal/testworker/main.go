// Command testworker is a worker process for the black-box tests: it runs
// a few workflows and steps against a Strand server until it is stopped.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/strandhq/strand/remote"
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

// Shout upper-cases its input.
func Shout(ctx context.Context, s string) (string, error) { return strings.ToUpper(s), nil }

func main() {
	server := flag.String("server", "http://127.0.0.1:8233", "the server's URL")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	w := worker.New(remote.New(*server, nil), worker.Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	worker.RegisterWorkflow(w, Approval)
	worker.RegisterStep(w, Shout)
	worker.RegisterWorkflow(w, Patient)
	worker.RegisterStep(w, Nap)
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
}
