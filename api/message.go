package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/strandhq/strand/store"
)

// Messages is what a client needs to send messages that runs wait for by
// name and correlation key (BPEL's callbacks and invocation messages),
// and to see the messages kept and the runs waiting. Package message
// implements it over a Service; a remote service implements it over HTTP.
//
// A message goes to the mailbox of its namespace, name and key: a run of
// the system workflow "strand.Mailbox", which delivers it into the history
// of one run waiting for it (workflow.Receive), keeps it until one waits
// or its time to live ends, or starts a workflow for it under the
// namespace's rule for its name.
type Messages interface {
	// SendMessage posts a message. It returns once the mailbox has it.
	SendMessage(ctx context.Context, req SendMessageRequest) (SendMessageResponse, error)
	// ListMailboxes lists a namespace's mailboxes that keep messages or
	// have runs waiting.
	ListMailboxes(ctx context.Context, req ListMailboxesRequest) (ListMailboxesResponse, error)
	// DescribeMailbox returns the messages a mailbox keeps and the runs
	// waiting on it.
	DescribeMailbox(ctx context.Context, ref MailboxRef) (MailboxDescription, error)
	// PutMessageRule makes messages of a name that no run waits for start
	// a workflow (BPEL's invocation messages); it replaces the name's rule.
	PutMessageRule(ctx context.Context, rule MessageRule) error
	// ListMessageRules returns a namespace's rules, by message name.
	ListMessageRules(ctx context.Context, namespace string) ([]MessageRule, error)
	// DeleteMessageRule removes the rule of a message name.
	DeleteMessageRule(ctx context.Context, ref MessageRuleRef) error
}

// DefaultMessageTTL is how long a message no run waits for is kept when
// it names no time to live; MaxMessageTTL is the longest it may name.
const (
	DefaultMessageTTL = 24 * time.Hour
	MaxMessageTTL     = 366 * 24 * time.Hour
)

// SendMessageRequest posts a message.
type SendMessageRequest struct {
	Namespace string `json:"namespace,omitempty" max:"63"`
	// Name is what the message is ("payment-confirmed").
	Name string `json:"name" required:"true" max:"200" text:"true"`
	// CorrelationKey is the conversation it belongs to (an order number):
	// runs wait for a name and a key.
	CorrelationKey string `json:"correlation_key" max:"200" text:"true"`
	Payload        Value  `json:"payload,omitempty" max:"16777216"`
	// TTL is how long the message is kept while no run waits for it
	// (DefaultMessageTTL when zero, at most MaxMessageTTL).
	TTL time.Duration `json:"ttl,omitempty" minimum:"0" maximum:"31622400000000000"`
	// Broadcast delivers the message to every run that waits for it within
	// its time to live, once each, rather than to the first only.
	Broadcast bool `json:"broadcast,omitempty"`
	// Priority (1 the highest to 5, 0 normal) orders the mailbox's work and
	// the start of a workflow under a rule.
	Priority int8 `json:"priority,omitempty" minimum:"0" maximum:"5"`
	// MessageID identifies the message: a message sent again with the same
	// id while its mailbox has it is not taken twice. One is made up when
	// empty.
	MessageID string `json:"message_id,omitempty" max:"200" id:"true"`
	Identity  string `json:"identity,omitempty" max:"256"`
}

// SendMessageResponse says which mailbox took a message.
type SendMessageResponse struct {
	MessageID string `json:"message_id"`
	// Mailbox is the mailbox's run.
	Mailbox RunRef `json:"mailbox"`
}

// MailboxRef names the mailbox of a message name and correlation key.
type MailboxRef struct {
	Namespace      string `json:"namespace,omitempty" max:"63"`
	Name           string `json:"name" required:"true" max:"200" text:"true"`
	CorrelationKey string `json:"correlation_key" max:"200" text:"true"`
}

// ListMailboxesRequest lists mailboxes, optionally of one message name.
type ListMailboxesRequest struct {
	Namespace string `json:"namespace,omitempty" max:"63"`
	Name      string `json:"name,omitempty" max:"200" text:"true"`
	PageSize  int    `json:"page_size,omitempty" minimum:"0" maximum:"1000"`
	PageToken []byte `json:"page_token,omitempty"`
}

// ListMailboxesResponse is a page of mailboxes.
type ListMailboxesResponse struct {
	Mailboxes     []MailboxSummary `json:"mailboxes"`
	NextPageToken []byte           `json:"next_page_token,omitempty"`
}

// MailboxSummary is a mailbox as lists show it: what it kept and who
// waited as of its last change that lists have seen (they lag by a
// second or so).
type MailboxSummary struct {
	Name           string    `json:"name"`
	CorrelationKey string    `json:"correlation_key"`
	Kept           int       `json:"kept"`
	Waiting        int       `json:"waiting"`
	WorkflowID     string    `json:"workflow_id"`
	RunID          string    `json:"run_id"`
	Since          time.Time `json:"since"`
}

// MailboxDescription is a mailbox now. RunID is its open run's, empty
// when it has none (it holds nothing).
type MailboxDescription struct {
	Name           string           `json:"name"`
	CorrelationKey string           `json:"correlation_key"`
	WorkflowID     string           `json:"workflow_id"`
	RunID          string           `json:"run_id"`
	Kept           []KeptMessage    `json:"kept"`
	Waiting        []MessageWaiter  `json:"waiting"`
	Delivered      []DeliveredEntry `json:"delivered,omitempty"`
}

// KeptMessage is a message a mailbox keeps: none waited for it yet, or it
// is a broadcast within its time to live.
type KeptMessage struct {
	MessageID string    `json:"message_id"`
	Sent      time.Time `json:"sent"`
	Expires   time.Time `json:"expires"`
	Broadcast bool      `json:"broadcast,omitempty"`
	Priority  int8      `json:"priority,omitempty"`
	Payload   Value     `json:"payload,omitempty"`
	Sender    string    `json:"sender,omitempty"`
	// DeliveredTo are the runs a broadcast went to.
	DeliveredTo []RunRef `json:"delivered_to,omitempty"`
}

// MessageWaiter is a run waiting for a mailbox's next message: one wait
// (a workflow.Receive) of the run, named by ID.
type MessageWaiter struct {
	ID    string    `json:"id"`
	Run   RunRef    `json:"run"`
	Since time.Time `json:"since"`
}

// DeliveredEntry is one of a mailbox's recent deliveries.
type DeliveredEntry struct {
	MessageID string    `json:"message_id"`
	Run       RunRef    `json:"run"`
	At        time.Time `json:"at"`
	// Started says the message started the run under a rule.
	Started bool `json:"started,omitempty"`
}

// MessageRuleRef names the rule of a message name.
type MessageRuleRef struct {
	Namespace string `json:"namespace,omitempty" max:"63"`
	Name      string `json:"name" required:"true" max:"200" text:"true"`
}

// MessageRule makes a message of Name that no run waits for start a run of
// WorkflowType, with the message's correlation key as its workflow id and
// its payload as input, at the message's priority.
type MessageRule struct {
	MessageRuleRef
	WorkflowType string `json:"workflow_type" required:"true" max:"250" text:"true"`
	Queue        string `json:"queue,omitempty" max:"1000"`
}

// MessageDelivery is what a waiting run receives: the message and where it
// came from.
type MessageDelivery struct {
	MessageID      string    `json:"message_id"`
	Name           string    `json:"name"`
	CorrelationKey string    `json:"correlation_key"`
	Payload        Value     `json:"payload,omitempty"`
	Sent           time.Time `json:"sent"`
	Sender         string    `json:"sender,omitempty"`
}

// The mailbox protocol: what the SDK's Receive and package message's
// service send to a mailbox, and how a mailbox delivers.
const (
	// MailboxWorkflowType is the type of a mailbox's runs (on SystemQueue).
	MailboxWorkflowType = "strand.Mailbox"
	// MailboxIDPrefix starts every mailbox's workflow id.
	MailboxIDPrefix = "strand-message:"
	// MailboxSignal is the signal a mailbox's commands arrive on.
	MailboxSignal = "strand.message"
)

// Kinds of MailboxCommand.
const (
	MailboxSend   = "send"   // a message sent
	MailboxWait   = "wait"   // a run waits for the next message
	MailboxUnwait = "unwait" // a run stopped waiting
)

// MailboxCommand is what a mailbox's signal carries.
type MailboxCommand struct {
	Kind           string `json:"kind"`
	Name           string `json:"name"`
	CorrelationKey string `json:"correlation_key"`
	// Message is a send's; Rule, the namespace's rule for its name then.
	Message *KeptMessage `json:"message,omitempty"`
	Rule    *MessageRule `json:"rule,omitempty"`
	// Waiter is a wait's or an unwait's.
	Waiter *MessageWaiter `json:"waiter,omitempty"`
}

// MailboxWorkflowID is the workflow id of the mailbox of a message name
// and correlation key: the prefix, the name's length, the name and the
// key, so that no two pairs share one; when that is longer than a
// workflow id may be, the prefix, "#" and a hash of it.
func MailboxWorkflowID(name, key string) string {
	id := MailboxIDPrefix + strconv.Itoa(len(name)) + ":" + name + ":" + key
	if utf8.RuneCountInString(id) <= store.MaxIDChars {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return MailboxIDPrefix + "#" + hex.EncodeToString(sum[:16])
}

// ParseMailboxWorkflowID returns the message name and correlation key of
// a mailbox's workflow id; ok is false for any other id, and for a hashed
// one (its run's attributes name them).
func ParseMailboxWorkflowID(id string) (name, key string, ok bool) {
	rest, ok := strings.CutPrefix(id, MailboxIDPrefix)
	if !ok || strings.HasPrefix(rest, "#") {
		return "", "", false
	}
	n, rest, ok := strings.Cut(rest, ":")
	size, err := strconv.Atoi(n)
	if !ok || err != nil || size < 0 || size >= len(rest) || rest[size] != ':' {
		return "", "", false
	}
	return rest[:size], rest[size+1:], true
}

// MessageDeliverySignal is the signal a mailbox delivers a message of name
// and key on, into the history of the run that waits for it.
func MessageDeliverySignal(name, key string) string {
	return MailboxSignal + ":" + strconv.Itoa(len(name)) + ":" + name + ":" + key
}
