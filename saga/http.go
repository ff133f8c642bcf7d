package saga

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/step"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// Register registers the interpreter of defined sagas (WorkflowType) and
// its resolve step on w, a worker of Queue; svc is where definitions are
// read.
func Register(w *worker.Worker, svc api.FrontEndService) {
	worker.RegisterWorkflowNamed(w, WorkflowType, Interpret)
	c := NewCatalog(svc, "")
	worker.RegisterStepNamed(w, stepResolve, c.resolveStep)
}

// HTTPRunner makes the calls of defined sagas for a worker group:
// register it on a worker of GroupQueue(group) with RegisterHTTPSteps.
type HTTPRunner struct {
	// Client makes the calls (default: http.DefaultClient). Each call is
	// bounded by its definition's timeout.
	Client *http.Client
	// Logger logs each call at debug level (default slog.Default()).
	Logger *slog.Logger
}

// RegisterHTTPSteps registers StepHTTP and StepHTTPCompensate on w, a
// worker of a group's queue.
func RegisterHTTPSteps(w *worker.Worker, r *HTTPRunner) {
	worker.RegisterStepNamed(w, StepHTTP, r.forward)
	worker.RegisterStepNamed(w, StepHTTPCompensate, r.compensate)
}

// Request is an HTTP request, rendered.
type Request struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
}

// HTTPCall is the input of StepHTTP, and a compensation's rendered call:
// a request and what its answers mean.
type HTTPCall struct {
	Saga string `json:"saga"`
	Step string `json:"step"`
	// Transaction is the saga's transaction id, sent as the header
	// X-Strand-Transaction.
	Transaction string        `json:"transaction"`
	Request     Request       `json:"request,omitzero"`
	Timeout     Duration      `json:"timeout,omitempty"`
	Success     []StatusRange `json:"success,omitempty"`
	Retryable   []StatusRange `json:"retryable,omitempty"`
	// Compensate is a forward call's compensation, to render with its
	// answer.
	Compensate *PendingCall `json:"compensate,omitempty"`
	// Error says why a compensation could not be rendered: it fails
	// without a call, and the saga waits for an operator.
	Error string `json:"error,omitempty"`
}

// PendingCall is a compensation before the forward call answered: its
// templates, and the values they read of the input and earlier answers
// (by reference, "steps.reserve.body.id"), taken when the forward call
// was rendered.
type PendingCall struct {
	Call   Call                       `json:"call"`
	Values map[string]json.RawMessage `json:"values,omitempty"`
}

// Answer is what a service answered: its status, its headers (names in
// lower case, values joined with ", "), and its body, the JSON value when
// it is JSON, its text otherwise.
type Answer struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    json.RawMessage   `json:"body,omitempty"`
	// Truncated says the body was longer than MaxAnswerBody: Body is its
	// text up to there.
	Truncated bool `json:"truncated,omitempty"`
}

// HTTPResult is the result of StepHTTP: the answer, and the step's
// compensation rendered with it (the input of StepHTTPCompensate is this
// result).
type HTTPResult struct {
	Answer
	Compensation *HTTPCall `json:"compensation,omitempty"`
}

// MaxAnswerBody is the most of an answer's body a step keeps.
const MaxAnswerBody = 8 << 20

// maxErrorBody is the most of an answer's body an error message quotes.
const maxErrorBody = 500

func (r *HTTPRunner) forward(ctx context.Context, in HTTPCall) (HTTPResult, error) {
	a, err := r.do(ctx, &in, PhaseForward)
	if err != nil {
		return HTTPResult{}, err
	}
	res := HTTPResult{Answer: *a}
	if in.Compensate != nil {
		res.Compensation = in.compensation(a)
	}
	return res, nil
}

func (r *HTTPRunner) compensate(ctx context.Context, in HTTPResult) (Answer, error) {
	c := in.Compensation
	switch {
	case c == nil:
		return Answer{}, nil // nothing to undo
	case c.Error != "":
		return Answer{}, &api.ApplicationError{Type: ErrorInvalid, Message: c.Error, NonRetryable: true}
	}
	a, err := r.do(ctx, c, PhaseCompensation)
	if err != nil {
		return Answer{}, err
	}
	return *a, nil
}

// compensation renders a forward call's compensation with its answer.
func (in *HTTPCall) compensation(a *Answer) *HTTPCall {
	pc := in.Compensate
	out := &HTTPCall{Saga: in.Saga, Step: in.Step, Transaction: in.Transaction, Timeout: in.Timeout,
		Success: pc.Call.Success, Retryable: pc.Call.Retryable}
	req, err := renderCall(&pc.Call, func(r *ref) (any, error) {
		var v any
		var err error
		if r.root == refResult {
			v, err = answerValue(a, r.path, "result")
		} else if raw, ok := pc.Values[r.raw]; ok {
			v, err = decodeJSON(raw)
		} else {
			err = errors.New("no value was taken for it")
		}
		if err != nil {
			return nil, fmt.Errorf("${%s}: %w", r.raw, err)
		}
		return v, nil
	})
	if err != nil {
		out.Error = fmt.Sprintf("the compensation of step %s could not be made from the answer (status %d): %v; undo the step by hand, then mark it done", in.Step, a.Status, err)
		return out
	}
	out.Request = req
	return out
}

// do makes a call and classifies its answer: a success is the answer; a
// retryable status, or no answer when connection is retryable, is a
// Retryable error; anything else fails the call for good (a compensation
// too: an operator decides).
func (r *HTTPRunner) do(ctx context.Context, in *HTTPCall, phase string) (*Answer, error) {
	client := r.Client
	if client == nil {
		client = http.DefaultClient
	}
	log := r.Logger
	if log == nil {
		log = slog.Default()
	}
	timeout := in.Timeout.Std()
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rq := in.Request
	var body io.Reader
	if rq.Body != "" {
		body = strings.NewReader(rq.Body)
	}
	req, err := http.NewRequestWithContext(ctx, rq.Method, rq.URL, body)
	if err != nil {
		return nil, &api.ApplicationError{Type: ErrorHTTP, Message: fmt.Sprintf("%s %s: %v", rq.Method, redact(rq.URL), err), NonRetryable: true}
	}
	for _, k := range sortedKeys(rq.Headers) {
		if strings.EqualFold(k, "Host") {
			req.Host = rq.Headers[k]
			continue
		}
		req.Header.Set(k, rq.Headers[k])
	}
	key := step.GetInfo(ctx).IdempotencyKey
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("X-Strand-Transaction", in.Transaction)
	what := fmt.Sprintf("%s %s", rq.Method, redact(rq.URL))
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		log.Debug("saga call: no answer", "saga", in.Saga, "step", in.Step, "phase", phase, "call", what, "key", key, "err", err)
		return nil, noAnswer(in, what, err, timeout)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswerBody+1))
	if err != nil {
		return nil, noAnswer(in, what, fmt.Errorf("reading the answer: %w", err), timeout)
	}
	a := answerOf(resp, b)
	log.Debug("saga call", "saga", in.Saga, "step", in.Step, "phase", phase, "call", what, "key", key, "status", resp.StatusCode,
		"took", time.Since(start).Round(time.Millisecond))
	if matchStatus(in.Success, resp.StatusCode) {
		return a, nil
	}
	details, _ := json.Marshal(a)
	msg := fmt.Sprintf("%s: %s", what, resp.Status)
	if t := excerpt(b); t != "" {
		msg += ": " + t
	}
	if matchStatus(in.Retryable, resp.StatusCode) {
		return nil, &api.ApplicationError{Type: RetryableType, Message: msg, Details: details}
	}
	return nil, &api.ApplicationError{Type: ErrorHTTP, Message: msg, NonRetryable: true, Details: details}
}

// noAnswer is the error of a call that got no answer: retryable when the
// call's retryable list has connection.
func noAnswer(in *HTTPCall, what string, err error, timeout time.Duration) error {
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("no answer within %s: %w", timeout, err)
	}
	msg := fmt.Sprintf("%s: %v", what, err)
	for _, r := range in.Retryable {
		if r == Connection {
			return &api.ApplicationError{Type: RetryableType, Message: msg}
		}
	}
	return &api.ApplicationError{Type: ErrorHTTP, Message: msg, NonRetryable: true}
}

// answerOf is a response as an Answer.
func answerOf(resp *http.Response, b []byte) *Answer {
	a := &Answer{Status: resp.StatusCode, Headers: map[string]string{}}
	for k, vs := range resp.Header {
		a.Headers[strings.ToLower(k)] = strings.Join(vs, ", ")
	}
	if len(b) > MaxAnswerBody {
		b, a.Truncated = b[:MaxAnswerBody], true
	}
	if len(b) == 0 {
		return a
	}
	if !a.Truncated && isJSON(resp.Header.Get("Content-Type"), b) {
		var c bytes.Buffer
		if json.Compact(&c, b) == nil {
			a.Body = c.Bytes()
			return a
		}
	}
	a.Body, _ = json.Marshal(string(b))
	return a
}

// isJSON reports whether a body is JSON: the service says so, or it is
// a JSON object or list.
func isJSON(contentType string, b []byte) bool {
	if !json.Valid(b) {
		return false
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt == "application/json" || strings.HasSuffix(mt, "+json") {
		return true
	}
	t := strings.TrimSpace(string(b[:min(len(b), 64)]))
	return strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")
}

// excerpt is the start of a body for an error message, on one line.
func excerpt(b []byte) string {
	if len(b) > maxErrorBody {
		n := maxErrorBody
		for n > 0 && !utf8.RuneStart(b[n]) {
			n--
		}
		b = append(b[:n:n], "…"...)
	}
	return strings.Join(strings.Fields(string(b)), " ")
}

// redact is a URL for messages: its password hidden.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	return u.Redacted()
}

// resolveStep reads the definition a run pins; a definition that does
// not exist fails the run for good.
func (c *Catalog) resolveStep(ctx context.Context, in RunInput) (Resolved, error) {
	d, err := c.svc.GetDefinition(ctx, typePrefix+in.Name, in.Version)
	if errors.Is(err, api.ErrNotFound) {
		what := "no saga definition " + in.Name
		if in.Version > 0 {
			what += fmt.Sprintf(" version %d", in.Version)
		}
		return Resolved{}, workflow.NewError(ErrorInvalid, what, true)
	}
	if err != nil {
		return Resolved{}, fmt.Errorf("saga: read the definition %s: %w", in.Name, err)
	}
	return Resolved{Version: d.Version, Body: string(d.Body)}, nil
}
