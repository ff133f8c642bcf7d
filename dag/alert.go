package dag

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/step"
	"github.com/strandhq/strand/workflow"
)

// AlertGroup is where an alert group's alerts go: a webhook called with an
// Alert as its JSON body, retried until it answers 2xx.
type AlertGroup struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
}

// SetAlertGroup stores an alert group.
func (c *Catalog) SetAlertGroup(ctx context.Context, name string, g AlertGroup, by string) error {
	if !validName.MatchString(name) {
		return api.InvalidArgument("name", "%q is not an alert group name", name)
	}
	if !strings.HasPrefix(g.URL, "http://") && !strings.HasPrefix(g.URL, "https://") {
		return api.InvalidArgument("url", "want an http:// or https:// URL, got %q", g.URL)
	}
	body, _ := json.Marshal(g)
	_, err := c.cl.PutDefinition(ctx, api.Definition{Type: alertPrefix + name, Body: body, ModifiedBy: by})
	return err
}

// AlertGroup returns an alert group.
func (c *Catalog) AlertGroup(ctx context.Context, name string) (AlertGroup, error) {
	d, err := c.cl.GetDefinition(ctx, alertPrefix+name, 0)
	if err != nil {
		return AlertGroup{}, fmt.Errorf("dag: alert group %s: %w", name, err)
	}
	var g AlertGroup
	err = json.Unmarshal(d.Body, &g)
	return g, err
}

// Alert is the JSON body of an alert group's webhook call.
type Alert struct {
	// Event is instance_success, instance_failure or task_timeout.
	Event    string    `json:"event"`
	DAG      string    `json:"dag"`
	Version  int32     `json:"version"`
	Instance string    `json:"instance"`
	State    State     `json:"state,omitempty"`
	Task     string    `json:"task,omitempty"`
	Message  string    `json:"message,omitempty"`
	Group    string    `json:"group"`
	Time     time.Time `json:"time"`
}

// alert sends the instance's end alert when its warning type asks.
func (ip *interpreter) alert(ctx workflow.Context) {
	ok := ip.inst.State == StateSuccess
	switch ip.warning.Type {
	case WarnAll:
	case WarnSuccess:
		if !ok {
			return
		}
	case WarnFailure:
		if ok {
			return
		}
	default:
		return
	}
	ev := "instance_failure"
	if ok {
		ev = "instance_success"
	}
	ip.sendAlert(ctx, Alert{Event: ev, State: ip.inst.State, Message: ip.inst.Error})
}

// sendAlert calls the warning group's webhook (a step with retries); a
// webhook that never answers does not fail the instance.
func (ip *interpreter) sendAlert(ctx workflow.Context, a Alert) {
	if ip.warning.Group == "" {
		return
	}
	a.DAG, a.Version, a.Instance, a.Group, a.Time = ip.inst.DAG, ip.inst.Version, ip.instanceID, ip.warning.Group, workflow.Now(ctx)
	opts := shortStep
	opts.Retry = &api.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 10}
	if _, err := workflow.ExecuteStepByName[struct{}](ctx, opts, stepAlert, a).Get(ctx); err != nil {
		workflow.Logger(ctx).Warn("dag: alert not delivered", "group", a.Group, "event", a.Event, "err", err)
	}
}

func (s *interpreterSteps) alert(ctx context.Context, a Alert) (struct{}, error) {
	g, err := s.catalog.AlertGroup(ctx, a.Group)
	if errors.Is(err, api.ErrNotFound) {
		return struct{}{}, workflow.NewError("strand.dag.alert_group", err.Error(), true)
	}
	if err != nil {
		return struct{}{}, err
	}
	body, _ := json.Marshal(a)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.URL, bytes.NewReader(body))
	if err != nil {
		return struct{}{}, workflow.NewError("strand.dag.alert_group", err.Error(), true)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", step.GetInfo(ctx).IdempotencyKey)
	for k, v := range g.Headers {
		req.Header.Set(k, v)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return struct{}{}, fmt.Errorf("alert group %s: %w", a.Group, err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return struct{}{}, fmt.Errorf("alert group %s: the webhook answered %s", a.Group, resp.Status)
	}
	return struct{}{}, nil
}
