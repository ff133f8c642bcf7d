package client_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/store/sqlite"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// Shout is a step: ordinary Go, retried by its policy when it fails.
func Shout(ctx context.Context, s string) (string, error) { return strings.ToUpper(s), nil }

// Greet is a workflow: it survives crashes because every step's result is
// recorded before the workflow goes on.
func Greet(ctx workflow.Context, name string) (string, error) {
	loud, err := workflow.ExecuteStep(ctx, workflow.StepOptions{}, Shout, name).Get(ctx)
	if err != nil {
		return "", err
	}
	return "hello, " + loud, nil
}

// Embedded Strand: an engine over an SQLite file, a worker running the code
// and a client starting a workflow and waiting for its result.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "strand-example")
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
	worker.RegisterWorkflow(w, Greet)
	worker.RegisterStep(w, Shout)
	if err := w.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer w.Stop(context.Background())

	c := client.New(eng, client.Options{})
	run, err := client.Start(ctx, c, Greet, "world", client.StartOptions{ID: "greeting-1"})
	if err != nil {
		log.Fatal(err)
	}
	out, err := run.Get(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)
	// Output: hello, WORLD
}
