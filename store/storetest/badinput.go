package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/strandhq/strand/store"
)

// testBadInput: every malformed request gets a typed error, nothing panics,
// and the store is as it was.
func testBadInput(t *testing.T, s *suite) {
	sh := s.acquire(1, "n")
	k := key("wf", "r")
	e := s.createRun(sh, k)
	s.must(s.st.UpsertVisibility(s.ctx, record(1, store.Now())))
	before := s.snapshot(sh, k)
	l := s.st.Limits()

	run := func(mut func(*store.Execution)) *store.Execution {
		c := next(e, 0)
		mut(c)
		return c
	}
	batch := func(mut func(*store.Batch)) *store.Batch {
		b := &store.Batch{ShardID: 1, RangeID: sh.RangeID, Tasks: []store.Task{transfer(1, k)}}
		mut(b)
		return b
	}
	update := func(c *store.Execution) func(*store.Batch) {
		return func(b *store.Batch) {
			b.Runs = []store.RunWrite{{Execution: c, ExpectedDBVersion: e.DBVersion}}
		}
	}
	big := make([]byte, l.MaxPayload+1)
	cases := []struct {
		name string
		call func() error
		want error
	}{
		{"nil batch", func() error { return s.st.Commit(s.ctx, nil) }, store.ErrInvalidArgument},
		{"empty batch", func() error { return s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID}) }, store.ErrInvalidArgument},
		{"negative shard", func() error { return s.st.Commit(s.ctx, batch(func(b *store.Batch) { b.ShardID = -1 })) }, store.ErrInvalidArgument},
		{"zero range", func() error { return s.st.Commit(s.ctx, batch(func(b *store.Batch) { b.RangeID = 0 })) }, store.ErrInvalidArgument},
		{"nil execution", func() error {
			return s.st.Commit(s.ctx, batch(func(b *store.Batch) { b.Runs = []store.RunWrite{{}} }))
		}, store.ErrInvalidArgument},
		{"empty namespace", func() error {
			return s.st.Commit(s.ctx, batch(update(run(func(c *store.Execution) { c.Namespace = "" }))))
		}, store.ErrInvalidArgument},
		{"empty workflow id", func() error {
			return s.st.Commit(s.ctx, batch(update(run(func(c *store.Execution) { c.WorkflowID = "" }))))
		}, store.ErrInvalidArgument},
		{"empty run id", func() error {
			return s.st.Commit(s.ctx, batch(update(run(func(c *store.Execution) { c.RunID = "" }))))
		}, store.ErrInvalidArgument},
		{"workflow id with NUL", func() error {
			return s.st.Commit(s.ctx, batch(update(run(func(c *store.Execution) { c.WorkflowID = "a\x00b" }))))
		}, store.ErrInvalidArgument},
		{"run id not UTF-8", func() error {
			return s.st.Commit(s.ctx, batch(update(run(func(c *store.Execution) { c.RunID = "\xff" }))))
		}, store.ErrInvalidArgument},
		{"run id too long", func() error {
			return s.st.Commit(s.ctx, batch(update(run(func(c *store.Execution) { c.RunID = strings.Repeat("r", store.MaxIDLength+1) }))))
		}, store.ErrInvalidArgument},
		{"request id with NUL", func() error {
			_, err := s.st.GetRequest(s.ctx, 1, store.RequestKey{Kind: store.RequestStart, Namespace: "default", WorkflowID: "wf", RequestID: "\x00"})
			return err
		}, store.ErrInvalidArgument},
		{"db version not raised", func() error {
			return s.st.Commit(s.ctx, batch(update(run(func(c *store.Execution) { c.DBVersion = e.DBVersion }))))
		}, store.ErrInvalidArgument},
		{"bad status", func() error {
			return s.st.Commit(s.ctx, batch(update(run(func(c *store.Execution) { c.DBVersion++; c.Status = 99 }))))
		}, store.ErrInvalidArgument},
		{"history gap", func() error {
			return s.st.Commit(s.ctx, batch(func(b *store.Batch) {
				c := next(e, 2)
				b.Runs = []store.RunWrite{{Execution: c, ExpectedDBVersion: e.DBVersion, History: []store.HistoryBlock{block(3, 3, "a"), block(5, 5, "b")}}}
			}))
		}, store.ErrInvalidArgument},
		{"history not ending at next event", func() error {
			return s.st.Commit(s.ctx, batch(func(b *store.Batch) {
				b.Runs = []store.RunWrite{{Execution: next(e, 5), ExpectedDBVersion: e.DBVersion, History: []store.HistoryBlock{block(3, 3, "a")}}}
			}))
		}, store.ErrInvalidArgument},
		{"same run twice", func() error {
			return s.st.Commit(s.ctx, batch(func(b *store.Batch) {
				b.Runs = []store.RunWrite{{Execution: next(e, 0), ExpectedDBVersion: e.DBVersion}, {Execution: next(e, 0), ExpectedDBVersion: e.DBVersion}}
			}))
		}, store.ErrInvalidArgument},
		{"replace without previous run", func() error {
			return s.st.Commit(s.ctx, batch(func(b *store.Batch) {
				b.Runs = []store.RunWrite{{Execution: newExecution(key("wf", "r9")), Current: store.CurrentReplace}}
			}))
		}, store.ErrInvalidArgument},
		{"unknown current mode", func() error {
			return s.st.Commit(s.ctx, batch(func(b *store.Batch) {
				b.Runs = []store.RunWrite{{Execution: next(e, 0), ExpectedDBVersion: e.DBVersion, Current: 9}}
			}))
		}, store.ErrInvalidArgument},
		{"oversize history", func() error {
			return s.st.Commit(s.ctx, batch(func(b *store.Batch) {
				b.Runs = []store.RunWrite{{Execution: next(e, 1), ExpectedDBVersion: e.DBVersion, History: []store.HistoryBlock{{FirstEventID: 3, LastEventID: 3, Events: big}}}}
			}))
		}, store.ErrPayloadTooLarge},
		{"oversize state", func() error {
			return s.st.Commit(s.ctx, batch(update(run(func(c *store.Execution) {
				c.DBVersion++
				c.Variables = map[string]store.Payload{"x": {Data: big}}
			}))))
		}, store.ErrPayloadTooLarge},
		{"oversize task", func() error {
			return s.st.Commit(s.ctx, batch(func(b *store.Batch) { b.Tasks[0].Data = big }))
		}, store.ErrPayloadTooLarge},
		{"timer without fire time", func() error {
			return s.st.Commit(s.ctx, batch(func(b *store.Batch) { b.Tasks[0].Category = store.CategoryTimer }))
		}, store.ErrInvalidArgument},
		{"transfer with fire time", func() error {
			return s.st.Commit(s.ctx, batch(func(b *store.Batch) { b.Tasks[0].Key.FireTime = time.Now() }))
		}, store.ErrInvalidArgument},
		{"unknown task category", func() error {
			return s.st.Commit(s.ctx, batch(func(b *store.Batch) { b.Tasks[0].Category = 42 }))
		}, store.ErrInvalidArgument},
		{"zero task id", func() error {
			return s.st.Commit(s.ctx, batch(func(b *store.Batch) { b.Tasks[0].Key.TaskID = 0 }))
		}, store.ErrInvalidArgument},
		{"request without id", func() error {
			return s.st.Commit(s.ctx, batch(func(b *store.Batch) {
				b.Requests = []store.Request{request(store.RequestStart, "wf", "", "r", time.Hour)}
			}))
		}, store.ErrInvalidArgument},
		{"request already expired", func() error {
			return s.st.Commit(s.ctx, batch(func(b *store.Batch) {
				b.Requests = []store.Request{request(store.RequestStart, "wf", "x", "r", -time.Hour)}
			}))
		}, store.ErrInvalidArgument},
		{"oversize document", func() error {
			var b store.Batch
			_, err := b.AddPayload(k, big, l)
			return err
		}, store.ErrPayloadTooLarge},
		{"acquire without owner", func() error {
			_, err := s.st.AcquireShard(s.ctx, store.AcquireShardRequest{ShardID: 1})
			return err
		}, store.ErrInvalidArgument},
		{"acquire negative shard", func() error {
			_, err := s.st.AcquireShard(s.ctx, store.AcquireShardRequest{ShardID: -3, Owner: "x"})
			return err
		}, store.ErrInvalidArgument},
		{"get run with empty id", func() error {
			_, err := s.st.GetExecution(s.ctx, 1, key("wf", ""))
			return err
		}, store.ErrInvalidArgument},
		{"current with empty workflow id", func() error {
			_, err := s.st.GetCurrentExecution(s.ctx, 1, "default", "")
			return err
		}, store.ErrInvalidArgument},
		{"history page size", func() error {
			_, err := s.st.ReadHistory(s.ctx, store.ReadHistoryRequest{ShardID: 1, Run: k, PageSize: store.MaxPageSize + 1})
			return err
		}, store.ErrInvalidArgument},
		{"history bad token", func() error {
			_, err := s.st.ReadHistory(s.ctx, store.ReadHistoryRequest{ShardID: 1, Run: k, PageToken: []byte("\x07history{}abcd")})
			return err
		}, store.ErrInvalidPageToken},
		{"tasks bad token", func() error {
			_, err := s.st.ReadTasks(s.ctx, store.ReadTasksRequest{ShardID: 1, Range: transferRange(), PageToken: []byte{0}})
			return err
		}, store.ErrInvalidPageToken},
		{"tasks unknown category", func() error {
			_, err := s.st.ReadTasks(s.ctx, store.ReadTasksRequest{ShardID: 1})
			return err
		}, store.ErrInvalidArgument},
		{"request key without kind", func() error {
			_, err := s.st.GetRequest(s.ctx, 1, store.RequestKey{Namespace: "default", WorkflowID: "wf", RequestID: "x"})
			return err
		}, store.ErrInvalidArgument},
		{"document without id", func() error {
			_, _, err := s.st.GetDocument(s.ctx, 1, k, "")
			return err
		}, store.ErrInvalidArgument},
		{"namespace without name", func() error {
			_, err := s.st.CreateNamespace(s.ctx, store.Namespace{})
			return err
		}, store.ErrInvalidArgument},
		{"namespace negative retention", func() error {
			_, err := s.st.CreateNamespace(s.ctx, store.Namespace{Name: "x", Retention: -time.Second})
			return err
		}, store.ErrInvalidArgument},
		{"namespace retention under a minute", func() error {
			_, err := s.st.CreateNamespace(s.ctx, store.Namespace{Name: "x", Retention: 4})
			return err
		}, store.ErrInvalidArgument},
		{"node without id", func() error { return s.st.UpsertNode(s.ctx, store.Node{ExpiresAt: time.Now()}) }, store.ErrInvalidArgument},
		{"definition without body", func() error {
			_, err := s.st.PutDefinition(s.ctx, store.Definition{Type: "x"})
			return err
		}, store.ErrInvalidArgument},
		{"oversize definition", func() error {
			_, err := s.st.PutDefinition(s.ctx, store.Definition{Type: "x", Body: big})
			return err
		}, store.ErrPayloadTooLarge},
		{"visibility without run id", func() error {
			r := record(2, store.Now())
			r.RunID = ""
			return s.st.UpsertVisibility(s.ctx, r)
		}, store.ErrInvalidArgument},
		{"visibility bad status", func() error {
			r := record(2, store.Now())
			r.Status = 0
			return s.st.UpsertVisibility(s.ctx, r)
		}, store.ErrInvalidArgument},
		{"list without namespace", func() error {
			_, err := s.st.ListRuns(s.ctx, store.ListRunsRequest{})
			return err
		}, store.ErrInvalidArgument},
		{"list negative page size", func() error {
			_, err := s.st.ListRuns(s.ctx, store.ListRunsRequest{RunFilter: store.RunFilter{Namespace: "default"}, PageSize: -1})
			return err
		}, store.ErrInvalidArgument},
		{"list bad status", func() error {
			_, err := s.st.ListRuns(s.ctx, store.ListRunsRequest{RunFilter: store.RunFilter{Namespace: "default", Statuses: []store.RunStatus{77}}})
			return err
		}, store.ErrInvalidArgument},
		{"list bad token", func() error {
			_, err := s.st.ListRuns(s.ctx, store.ListRunsRequest{RunFilter: store.RunFilter{Namespace: "default"}, PageToken: []byte("not a token")})
			return err
		}, store.ErrInvalidPageToken},
		{"count without namespace", func() error {
			_, err := s.st.CountRuns(s.ctx, store.RunFilter{})
			return err
		}, store.ErrInvalidArgument},
		{"list bad token is an invalid argument", func() error {
			_, err := s.st.ListRuns(s.ctx, store.ListRunsRequest{RunFilter: store.RunFilter{Namespace: "default"}, PageToken: []byte("not a token")})
			return err
		}, store.ErrInvalidArgument},
		{"count too many statuses", func() error {
			_, err := s.st.CountRuns(s.ctx, store.RunFilter{Namespace: "default", Statuses: make([]store.RunStatus, store.MaxFilterStatuses+1)})
			return err
		}, store.ErrInvalidArgument},
		{"list too many excluded types", func() error {
			_, err := s.st.ListRuns(s.ctx, store.ListRunsRequest{RunFilter: store.RunFilter{Namespace: "default", ExcludeTypes: make([]string, store.MaxFilterExcludeTypes+1)}})
			return err
		}, store.ErrInvalidArgument},
		{"list too many attributes", func() error {
			attrs := map[string]string{}
			for i := range store.MaxFilterAttributes + 1 {
				attrs[fmt.Sprint("a", i)] = "v"
			}
			_, err := s.st.ListRuns(s.ctx, store.ListRunsRequest{RunFilter: store.RunFilter{Namespace: "default", Attributes: attrs}})
			return err
		}, store.ErrInvalidArgument},
	}
	for _, c := range cases {
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panic: %v", r)
				}
			}()
			return c.call()
		}()
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
			continue
		}
		var ia *store.InvalidArgumentError
		if errors.Is(c.want, store.ErrInvalidArgument) && !errors.As(err, &ia) {
			t.Errorf("%s: %v does not name the field at fault", c.name, err)
		}
	}
	equal(t, "store after bad input", s.snapshot(sh, k), before)
}

type snapshot struct {
	Shard      store.Shard
	Run        *store.Execution
	Current    store.CurrentExecution
	History    []string
	Tasks      []store.Task
	Namespaces []store.Namespace
	Visible    int64
	Nodes      []store.Node
	Defs       []store.Definition
}

func (s *suite) snapshot(sh store.Shard, k store.RunKey) snapshot {
	s.t.Helper()
	var out snapshot
	var err error
	out.Shard, err = s.st.GetShard(s.ctx, sh.ID)
	s.must(err)
	out.Run = s.getRun(sh, k)
	out.Current, err = s.st.GetCurrentExecution(s.ctx, sh.ID, k.Namespace, k.WorkflowID)
	s.must(err)
	out.History = eventsOf(s.history(sh.ID, k))
	for c := store.CategoryTransfer; c.Valid(); c++ {
		out.Tasks = append(out.Tasks, s.tasks(sh.ID, store.TaskRange{Category: c})...)
	}
	out.Namespaces, err = s.st.ListNamespaces(s.ctx)
	s.must(err)
	out.Visible, err = s.st.CountRuns(s.ctx, store.RunFilter{Namespace: k.Namespace})
	s.must(err)
	out.Nodes, err = s.st.ListNodes(s.ctx, time.Time{})
	s.must(err)
	out.Defs, err = s.st.ListDefinitions(s.ctx, "")
	s.must(err)
	return out
}
