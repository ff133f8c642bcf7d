package humantask_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/humantask"
	"github.com/strandhq/strand/store/sqlite"
	"github.com/strandhq/strand/system"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// Purchase asks finance to approve a purchase and says what they decided.
func Purchase(ctx workflow.Context, item string) (string, error) {
	out, err := workflow.HumanTask(ctx, workflow.HumanTaskOptions{
		Title:    "Approve the purchase of " + item,
		Groups:   []string{"finance"},
		Form:     json.RawMessage(`{"type": "object", "required": ["budget"], "properties": {"budget": {"type": "string"}}}`),
		Outcomes: []string{"approve", "reject"},
		Due:      48 * time.Hour,
	}).Get(ctx)
	if err != nil {
		return "", err
	}
	var form struct {
		Budget string `json:"budget"`
	}
	if err := json.Unmarshal(out.Data, &form); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s: %s by %s, budget %s", item, out.Outcome, out.By, form.Budget), nil
}

// A human task on an embedded engine: a run asks finance, bob (of
// finance) finds it in his inbox, claims it and completes it.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "strand-task-example")
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
	// Tasks are system workflows: the system runner runs them.
	sys := system.NewRunner(eng, system.RunnerOptions{})
	if err := sys.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer sys.Stop(context.Background())
	w := worker.New(eng, worker.Options{})
	worker.RegisterWorkflow(w, Purchase)
	if err := w.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer w.Stop(context.Background())

	run, err := client.Start(ctx, client.New(eng, client.Options{}), Purchase, "a laptop", client.StartOptions{ID: "purchase-7"})
	if err != nil {
		log.Fatal(err)
	}

	tasks := humantask.NewService(eng)
	bob := api.TaskCaller{User: "bob", Groups: []string{"finance"}}
	var inbox api.ListTasksResponse
	for len(inbox.Tasks) == 0 { // lists show a new task a moment later
		time.Sleep(50 * time.Millisecond)
		if inbox, err = tasks.ListTasks(ctx, api.ListTasksRequest{TaskCaller: bob}); err != nil {
			log.Fatal(err)
		}
	}
	task := api.TaskRef{TaskID: inbox.Tasks[0].TaskID}
	fmt.Println("bob's inbox:", inbox.Tasks[0].Title)
	if _, err := tasks.ActOnTask(ctx, api.TaskActionRequest{TaskRef: task, TaskCaller: bob, Action: api.TaskActionClaim}); err != nil {
		log.Fatal(err)
	}
	// The form wants a budget: data without one is refused.
	_, err = tasks.ActOnTask(ctx, api.TaskActionRequest{TaskRef: task, TaskCaller: bob, Action: api.TaskActionComplete,
		Outcome: "approve", Data: json.RawMessage(`{}`)})
	fmt.Println("refused:", err != nil)
	if _, err := tasks.ActOnTask(ctx, api.TaskActionRequest{TaskRef: task, TaskCaller: bob, Action: api.TaskActionComplete,
		Outcome: "approve", Data: json.RawMessage(`{"budget": "IT-2026"}`)}); err != nil {
		log.Fatal(err)
	}
	out, err := run.Get(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)
	// Output:
	// bob's inbox: Approve the purchase of a laptop
	// refused: true
	// a laptop: approve by bob, budget IT-2026
}
