package sdk

import (
	"errors"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/strandhq/strand/api"
)

// The bounds of audit details, the API's (api.AuditDetail).
const (
	maxDetails         = 100
	maxDetailName      = 256
	maxDetailValueSize = 16 << 20
)

// AuditDetails collects the audit details that workflow or step code
// attaches to the event its work ends in. A name given again replaces its
// value. It is safe for concurrent use (a step's goroutines).
type AuditDetails struct {
	mu   sync.Mutex
	list []api.AuditDetail
}

// Set attaches value, encoded as JSON (a string is text), under name.
func (d *AuditDetails) Set(name string, value any) error {
	switch n := utf8.RuneCountInString(name); {
	case n == 0:
		return errors.New("audit detail: a name is required")
	case n > maxDetailName:
		return fmt.Errorf("audit detail: name of %d characters; at most %d", n, maxDetailName)
	}
	b, err := Encode(value)
	if err != nil {
		return fmt.Errorf("audit detail %q: %w", name, err)
	}
	if len(b) > maxDetailValueSize {
		return fmt.Errorf("audit detail %q: %d bytes; at most %d", name, len(b), maxDetailValueSize)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range d.list {
		if d.list[i].Name == name {
			d.list[i].Value = b
			return nil
		}
	}
	if len(d.list) == maxDetails {
		return fmt.Errorf("audit detail %q: at most %d details to an event", name, maxDetails)
	}
	d.list = append(d.list, api.AuditDetail{Name: name, Value: b})
	return nil
}

// Take returns the details collected and forgets them.
func (d *AuditDetails) Take() []api.AuditDetail {
	d.mu.Lock()
	defer d.mu.Unlock()
	list := d.list
	d.list = nil
	return list
}

// AuditDetail attaches value under name to the event that records the
// workflow task now running (WorkflowTaskCompleted). Replays attach
// nothing: history holds what the first run attached.
func AuditDetail(ctx Context, name string, value any) error {
	inst := ctx.state().inst
	if inst.replaying {
		return nil
	}
	return inst.details.Set(name, value)
}

// TakeDetails returns the audit details the workflow attached since the
// last call: the running task's.
func (inst *Instance) TakeDetails() []api.AuditDetail { return inst.details.Take() }
