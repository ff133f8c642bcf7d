package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strandhq/strand/remote"
	"github.com/strandhq/strand/statemachine"
)

// TestStateMachineWorkerKilled: the worker running a state's method is
// SIGKILLed; the instance records a recovery action and the method runs
// again on another worker.
func TestStateMachineWorkerKilled(t *testing.T) {
	url := systemServer(t)
	bin := binaries(t, "testworker")
	effects := filepath.Join(t.TempDir(), "effects")
	first, _ := process(t, "worker started", filepath.Join(bin, "testworker"), "--server", url, "--effects", effects, "--identity", "first")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := statemachine.NewClient(remote.New(url, nil), "")
	id, err := c.Create(ctx, statemachine.CreateRequest{Type: "delivery", ExternalID: "parcel-1", Vars: map[string]string{"sleep": "3s"}})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if b, _ := os.ReadFile(effects); strings.Count(string(b), "deliver "+id) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the state never started")
		}
	}
	first.Process.Kill()
	first.Wait()
	process(t, "worker started", filepath.Join(bin, "testworker"), "--server", url, "--effects", effects, "--identity", "second")
	var inst *statemachine.Instance
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		inst, err = c.Get(ctx, id)
		if err == nil && inst.Status == statemachine.StatusFinished {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not finished after the worker was killed: %+v, %v", inst, err)
		}
	}
	var types []string
	for _, a := range inst.Actions {
		types = append(types, string(a.Type))
	}
	if got := strings.Join(types, " "); got != "recovery stateExecution" || inst.State != "delivered" {
		t.Fatalf("actions %s, state %s", got, inst.State)
	}
	if b, _ := os.ReadFile(effects); strings.Count(string(b), "deliver "+id) != 2 {
		t.Fatalf("the method ran %d times; want twice: %s", strings.Count(string(b), "deliver "+id), b)
	}
}
