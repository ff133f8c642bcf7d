package worker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// oldServer is a service from before polls named their steps: it refuses
// the field, as the server's strict decoding does.
type oldServer struct {
	api.Service
	polled chan api.PollRequest
	named  chan []string
}

func (s *oldServer) PollStepTask(ctx context.Context, req api.PollRequest) (*api.StepTask, error) {
	if req.Steps != nil {
		select {
		case s.named <- req.Steps:
		default:
		}
		return nil, store.InvalidArgument("steps", "unknown field")
	}
	select {
	case s.polled <- req:
	default:
	}
	<-ctx.Done()
	return nil, nil
}

// TestStepPollNamesItsSteps: a worker's step polls name the steps it
// registered; a server that refuses the list gets polls without it.
func TestStepPollNamesItsSteps(t *testing.T) {
	svc := &oldServer{polled: make(chan api.PollRequest, 1), named: make(chan []string, 1)}
	w := New(svc, Options{StepPollers: 1})
	RegisterStepNamed(w, "b", func(context.Context, int) (int, error) { return 0, nil })
	RegisterStepNamed(w, "a", func(context.Context, int) (int, error) { return 0, nil })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	select {
	case named := <-svc.named:
		if got := fmt.Sprint(named); got != "[a b]" {
			t.Fatalf("the poll named %s; want [a b]", got)
		}
	case <-ctx.Done():
		t.Fatal("the worker did not poll")
	}
	select {
	case req := <-svc.polled:
		if req.Steps != nil || req.Queue != api.DefaultQueue {
			t.Fatalf("the poll after the refusal: %+v", req)
		}
	case <-ctx.Done():
		t.Fatal("the worker did not poll again without its steps")
	}
	if err := olderServer(store.InvalidArgument("steps", "unknown field")); !err {
		t.Fatal("olderServer")
	}
}
