package humantask_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/strandhq/strand/access"
	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/humantask"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/internal/testenv"
	"github.com/strandhq/strand/remote"
	"github.com/strandhq/strand/server"
	"github.com/strandhq/strand/system"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// served is what the test's server serves: the engine and the tasks.
type served struct {
	*engine.Engine
	*humantask.Service
}

// TestInboxOverHTTP: through a server with access control, the caller is
// who their token says, whatever the request claims: a user outside a
// task's users and groups neither sees it nor acts on it, and one in its
// group claims and completes it.
func TestInboxOverHTTP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st := testdb.SQLite(t)
	eng, err := engine.Open(ctx, st, engine.Options{Logger: testenv.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	runner := system.NewRunner(eng, system.RunnerOptions{Logger: testenv.Logger(), Worker: worker.Options{Logger: testenv.Logger()}})
	if err := runner.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer runner.Stop(context.Background())
	w := worker.New(eng, worker.Options{Logger: testenv.Logger()})
	worker.RegisterWorkflow(w, Expense)
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	ac := access.New(st, access.Options{BcryptCost: 4})
	srv := httptest.NewServer(server.New(served{eng, humantask.NewService(eng)}, server.Options{Access: ac, Logger: testenv.Logger()}))
	defer srv.Close()
	as := func(name string, groups ...string) *remote.Service {
		t.Helper()
		if _, err := ac.CreateUser(ctx, access.NewUser{Name: name, Kind: access.KindService, Groups: groups}); err != nil {
			t.Fatal(err)
		}
		if _, err := ac.Grant(ctx, name, "default", access.Writer); err != nil {
			t.Fatal(err)
		}
		secret, _, err := ac.CreateToken(ctx, access.NewToken{User: name})
		if err != nil {
			t.Fatal(err)
		}
		return remote.NewWithOptions(srv.URL, remote.Options{Token: secret})
	}
	bob, carol := as("bob", "finance"), as("carol", "sales")

	run, err := client.Start(ctx, client.New(eng, client.Options{}), Expense, workflow.HumanTaskOptions{Title: "Approve", Groups: []string{"finance"},
		Form: json.RawMessage(form), Outcomes: []string{"approve"}}, client.StartOptions{ID: "expense-http"})
	if err != nil {
		t.Fatal(err)
	}
	var id string
	for deadline := time.Now().Add(30 * time.Second); id == ""; time.Sleep(50 * time.Millisecond) {
		l, err := bob.ListTasks(ctx, api.ListTasksRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Tasks) == 1 {
			id = l.Tasks[0].TaskID
		}
		if time.Now().After(deadline) {
			t.Fatal("bob's inbox stays empty")
		}
	}
	// Carol says she is bob, of finance: the server goes by her token.
	posing := api.TaskCaller{User: "bob", Groups: []string{"finance"}}
	if l, err := carol.ListTasks(ctx, api.ListTasksRequest{TaskCaller: posing}); err != nil || len(l.Tasks) != 0 {
		t.Fatalf("carol's inbox: %+v, %v", l, err)
	}
	if _, err := carol.DescribeTask(ctx, api.DescribeTaskRequest{TaskRef: api.TaskRef{TaskID: id}, TaskCaller: posing}); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("carol describes it: %v", err)
	}
	if _, err := carol.ActOnTask(ctx, api.TaskActionRequest{TaskRef: api.TaskRef{TaskID: id}, TaskCaller: posing, Action: api.TaskActionClaim}); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("carol claims it: %v", err)
	}
	ref := api.TaskRef{TaskID: id}
	if got, err := bob.ActOnTask(ctx, api.TaskActionRequest{TaskRef: ref, Action: api.TaskActionClaim}); err != nil || got.Assignee != "bob" {
		t.Fatalf("bob's claim: %+v, %v", got, err)
	}
	if _, err := bob.ActOnTask(ctx, api.TaskActionRequest{TaskRef: ref, Action: api.TaskActionComplete, Data: json.RawMessage(`{"amount": "lots"}`)}); !errors.Is(err, api.ErrInvalidArgument) {
		t.Fatalf("data that fails the form: %v", err)
	}
	if _, err := bob.ActOnTask(ctx, api.TaskActionRequest{TaskRef: ref, Action: api.TaskActionComplete, Data: json.RawMessage(`{"amount": 7}`)}); err != nil {
		t.Fatal(err)
	}
	out, err := run.Get(ctx)
	if err != nil || out.Outcome != "approve" || out.By != "bob" {
		t.Fatalf("outcome: %+v, %v", out, err)
	}
}
