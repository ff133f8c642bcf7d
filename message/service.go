package message

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// Service implements api.Messages over an api.Service: a send and a list
// are a signal-with-start and a list of mailbox runs, describe is a
// query, and the rules are kept in the namespace's data (the service
// needs api.Namespaces for them). A system worker must run the mailboxes
// of the namespace (strand server runs one).
type Service struct {
	svc api.Service
	// now is the clock; tests set it.
	now func() time.Time

	mu    sync.Mutex
	rules map[string]cachedRules
}

// cachedRules are a namespace's rules as read at a time, when rule
// changes in this process had counted gen.
type cachedRules struct {
	rules map[string]api.MessageRule
	at    time.Time
	gen   int64
}

// rulesFresh is how long a node sends by the rules it read: a rule put on
// one node applies on the others within it (at once on the node itself).
const rulesFresh = time.Second

// rulesChanged counts the rule changes made in this process: every
// Service reads the rules again after one.
var rulesChanged atomic.Int64

// NewService returns the messages of svc.
func NewService(svc api.Service) *Service {
	return &Service{svc: svc, now: time.Now, rules: map[string]cachedRules{}}
}

var _ api.Messages = (*Service)(nil)

// SendMessage implements api.Messages.
func (s *Service) SendMessage(ctx context.Context, req api.SendMessageRequest) (api.SendMessageResponse, error) {
	if err := store.CheckLimits(&req); err != nil {
		return api.SendMessageResponse{}, err
	}
	switch {
	case req.Name == "":
		return api.SendMessageResponse{}, api.InvalidArgument("name", "empty: name the message")
	case req.TTL < 0 || req.TTL > api.MaxMessageTTL:
		return api.SendMessageResponse{}, api.InvalidArgument("ttl", "%s; want 0 (%s) up to %s", req.TTL, api.DefaultMessageTTL, api.MaxMessageTTL)
	case req.Priority < 0 || req.Priority > api.PriorityLowest:
		return api.SendMessageResponse{}, api.InvalidArgument("priority", "%d; want 0 (normal) or 1 (highest) to %d (lowest)", req.Priority, api.PriorityLowest)
	}
	ns := api.NamespaceOrDefault(req.Namespace)
	if req.MessageID == "" {
		req.MessageID = uuid.NewString()
	}
	ttl := req.TTL
	if ttl == 0 {
		ttl = api.DefaultMessageTTL
	}
	rule, err := s.rule(ctx, ns, req.Name)
	if err != nil {
		return api.SendMessageResponse{}, err
	}
	now := s.now().UTC()
	cmd := api.MailboxCommand{Kind: api.MailboxSend, Name: req.Name, CorrelationKey: req.CorrelationKey, Rule: rule,
		Message: &api.KeptMessage{MessageID: req.MessageID, Sent: now, Expires: now.Add(ttl), Broadcast: req.Broadcast,
			Priority: req.Priority, Payload: req.Payload, Sender: req.Identity}}
	input, err := json.Marshal(cmd)
	if err != nil {
		return api.SendMessageResponse{}, fmt.Errorf("message: encode: %w", err)
	}
	id := api.MailboxWorkflowID(req.Name, req.CorrelationKey)
	resp, err := s.svc.SignalWithStart(ctx, api.SignalWithStartRequest{SignalName: api.MailboxSignal, SignalInput: input,
		Start: api.StartRequest{Namespace: ns, WorkflowID: id, WorkflowType: api.MailboxWorkflowType, Queue: api.SystemQueue,
			Priority: req.Priority, RequestID: "message:" + req.MessageID, Identity: req.Identity}})
	if err != nil {
		return api.SendMessageResponse{}, err
	}
	return api.SendMessageResponse{MessageID: req.MessageID, Mailbox: api.RunRef{Namespace: ns, WorkflowID: id, RunID: resp.RunID}}, nil
}

// ListMailboxes implements api.Messages: the mailboxes' open runs, as
// lists see them.
func (s *Service) ListMailboxes(ctx context.Context, req api.ListMailboxesRequest) (api.ListMailboxesResponse, error) {
	if err := store.CheckLimits(&req); err != nil {
		return api.ListMailboxesResponse{}, err
	}
	lr := api.ListRequest{Namespace: api.NamespaceOrDefault(req.Namespace), WorkflowType: api.MailboxWorkflowType,
		Statuses: []store.RunStatus{store.StatusRunning}, PageSize: req.PageSize, PageToken: req.PageToken}
	if req.Name != "" {
		lr.Attributes = map[string]string{attrName: req.Name}
	}
	page, err := s.svc.ListWorkflows(ctx, lr)
	if err != nil {
		return api.ListMailboxesResponse{}, err
	}
	out := api.ListMailboxesResponse{Mailboxes: make([]api.MailboxSummary, 0, len(page.Runs)), NextPageToken: page.NextPageToken}
	for _, r := range page.Runs {
		name, key, ok := api.ParseMailboxWorkflowID(r.WorkflowID)
		if !ok { // a hashed id: the attributes name the mailbox
			name, key = r.Attributes[attrName], r.Attributes[attrKey]
		}
		kept, _ := strconv.Atoi(r.Attributes[attrKept])
		waiting, _ := strconv.Atoi(r.Attributes[attrWaiting])
		out.Mailboxes = append(out.Mailboxes, api.MailboxSummary{Name: name, CorrelationKey: key, Kept: kept, Waiting: waiting,
			WorkflowID: r.WorkflowID, RunID: r.RunID, Since: r.StartTime})
	}
	return out, nil
}

// DescribeMailbox implements api.Messages: a mailbox with no open run
// keeps nothing and has no one waiting.
func (s *Service) DescribeMailbox(ctx context.Context, ref api.MailboxRef) (api.MailboxDescription, error) {
	if err := store.CheckLimits(&ref); err != nil {
		return api.MailboxDescription{}, err
	}
	if ref.Name == "" {
		return api.MailboxDescription{}, api.InvalidArgument("name", "empty: name the message")
	}
	id := api.MailboxWorkflowID(ref.Name, ref.CorrelationKey)
	empty := api.MailboxDescription{Name: ref.Name, CorrelationKey: ref.CorrelationKey, WorkflowID: id,
		Kept: []api.KeptMessage{}, Waiting: []api.MessageWaiter{}}
	rr := api.RunRef{Namespace: api.NamespaceOrDefault(ref.Namespace), WorkflowID: id}
	d, err := s.svc.DescribeWorkflow(ctx, rr)
	if errors.Is(err, api.ErrNotFound) {
		return empty, nil
	}
	if err != nil {
		return api.MailboxDescription{}, err
	}
	if d.Status != store.StatusRunning {
		return empty, nil // closed: it held nothing
	}
	rr.RunID = d.RunID
	raw, err := s.svc.QueryWorkflow(ctx, api.QueryRequest{RunRef: rr, Name: queryName})
	if err != nil {
		return api.MailboxDescription{}, err
	}
	var out api.MailboxDescription
	if err := json.Unmarshal(raw, &out); err != nil {
		return api.MailboxDescription{}, fmt.Errorf("message: decode the mailbox of %q/%q: %w", ref.Name, ref.CorrelationKey, err)
	}
	return out, nil
}

// ruleKeyPrefix starts the key of a rule in its namespace's data.
const ruleKeyPrefix = "strand.message.rule:"

// ruleKey is the key of a message name's rule in its namespace's data:
// the prefix and the name, or, for a name too long for a data key (128
// bytes), the prefix and a hash of the name (the value holds the name).
func ruleKey(name string) string {
	if len(ruleKeyPrefix)+len(name) <= 128 {
		return ruleKeyPrefix + name
	}
	sum := sha256.Sum256([]byte(name))
	return ruleKeyPrefix + "#" + hex.EncodeToString(sum[:16])
}

// storedRule is a rule's value in the namespace's data.
type storedRule struct {
	Name         string `json:"name"`
	WorkflowType string `json:"workflow_type"`
	Queue        string `json:"queue,omitempty"`
}

func (s *Service) namespaces() (api.Namespaces, error) {
	n, ok := s.svc.(api.Namespaces)
	if !ok {
		return nil, fmt.Errorf("%w: message rules need a service with namespaces", api.ErrFailedPrecondition)
	}
	return n, nil
}

// PutMessageRule implements api.Messages.
func (s *Service) PutMessageRule(ctx context.Context, rule api.MessageRule) error {
	if err := store.CheckLimits(&rule); err != nil {
		return err
	}
	switch {
	case rule.Name == "":
		return api.InvalidArgument("name", "empty: name the message")
	case rule.WorkflowType == "":
		return api.InvalidArgument("workflow_type", "empty: name the workflow a message starts")
	}
	v, err := json.Marshal(storedRule{Name: rule.Name, WorkflowType: rule.WorkflowType, Queue: rule.Queue})
	if err != nil {
		return fmt.Errorf("message: encode rule: %w", err)
	}
	return s.updateRules(ctx, rule.Namespace, func(data map[string]string) error {
		data[ruleKey(rule.Name)] = string(v)
		return nil
	})
}

// DeleteMessageRule implements api.Messages.
func (s *Service) DeleteMessageRule(ctx context.Context, ref api.MessageRuleRef) error {
	if err := store.CheckLimits(&ref); err != nil {
		return err
	}
	return s.updateRules(ctx, ref.Namespace, func(data map[string]string) error {
		if _, ok := data[ruleKey(ref.Name)]; !ok {
			return fmt.Errorf("%w: no message rule for %q", api.ErrNotFound, ref.Name)
		}
		delete(data, ruleKey(ref.Name))
		return nil
	})
}

// updateRules changes a namespace's data, again when another update came
// between its read and its write.
func (s *Service) updateRules(ctx context.Context, namespace string, change func(data map[string]string) error) error {
	nss, err := s.namespaces()
	if err != nil {
		return err
	}
	namespace = api.NamespaceOrDefault(namespace)
	for attempt := 0; ; attempt++ {
		n, err := nss.DescribeNamespace(ctx, namespace)
		if err != nil {
			return err
		}
		n.Data = maps.Clone(n.Data)
		if n.Data == nil {
			n.Data = map[string]string{}
		}
		if err := change(n.Data); err != nil {
			return err
		}
		_, err = nss.UpdateNamespace(ctx, n)
		if errors.Is(err, api.ErrConflict) && attempt < 5 {
			continue
		}
		if err == nil {
			rulesChanged.Add(1)
		}
		return err
	}
}

// ListMessageRules implements api.Messages.
func (s *Service) ListMessageRules(ctx context.Context, namespace string) ([]api.MessageRule, error) {
	rules, err := s.readRules(ctx, api.NamespaceOrDefault(namespace))
	if err != nil {
		return nil, err
	}
	out := slices.Collect(maps.Values(rules))
	slices.SortFunc(out, func(a, b api.MessageRule) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// rule returns the rule of a message name, nil when it has none, as the
// node read it within rulesFresh.
func (s *Service) rule(ctx context.Context, ns, name string) (*api.MessageRule, error) {
	s.mu.Lock()
	c, ok := s.rules[ns]
	s.mu.Unlock()
	gen := rulesChanged.Load()
	if !ok || c.gen != gen || s.now().Sub(c.at) > rulesFresh {
		if _, err := s.namespaces(); err != nil {
			return nil, nil // no namespaces, no rules
		}
		rules, err := s.readRules(ctx, ns)
		if err != nil {
			return nil, err
		}
		c = cachedRules{rules: rules, at: s.now(), gen: gen}
		s.mu.Lock()
		s.rules[ns] = c
		s.mu.Unlock()
	}
	if r, ok := c.rules[name]; ok {
		return &r, nil
	}
	return nil, nil
}

func (s *Service) readRules(ctx context.Context, ns string) (map[string]api.MessageRule, error) {
	nss, err := s.namespaces()
	if err != nil {
		return nil, err
	}
	n, err := nss.DescribeNamespace(ctx, ns)
	if err != nil {
		return nil, err
	}
	rules := map[string]api.MessageRule{}
	for k, v := range n.Data {
		if !strings.HasPrefix(k, ruleKeyPrefix) {
			continue
		}
		var sr storedRule
		if err := json.Unmarshal([]byte(v), &sr); err != nil || sr.Name == "" {
			continue // not one of ours
		}
		rules[sr.Name] = api.MessageRule{MessageRuleRef: api.MessageRuleRef{Namespace: ns, Name: sr.Name}, WorkflowType: sr.WorkflowType, Queue: sr.Queue}
	}
	return rules, nil
}
