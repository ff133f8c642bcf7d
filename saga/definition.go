package saga

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Definition is a saga written in YAML (or JSON) instead of Go: its steps
// are HTTP calls, each with an optional compensating call, run in order
// or in parallel groups. A definition is stored in versions (Catalog),
// and each run of it is a run of the interpreter WorkflowType, which
// pins the version it started with; strand worker runs the interpreter
// and the HTTP steps. Parse reads and checks one.
type Definition struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Options say how every step is retried, timed and placed.
	Options DefinitionOptions `json:"options,omitzero"`
	// Steps run in order; a parallel group's steps run together.
	Steps []StepSpec `json:"steps"`
}

// DefinitionOptions configure every step of a defined saga.
type DefinitionOptions struct {
	// Retry retries a forward call's retryable failures (Options.Retry;
	// default back-off 1 s doubling to 1 min, for up to 10 min).
	Retry RetrySpec `json:"retry,omitzero"`
	// CompensationRetry retries a failing compensation before the saga
	// waits for an operator (Options.Compensation; default back-off 1 s
	// doubling to 1 min, 10 attempts). It has no deadline.
	CompensationRetry RetrySpec `json:"compensation_retry,omitzero"`
	// Timeout bounds each attempt of a call, its answer read (default
	// DefaultTimeout). A call that does not answer in time counts as a
	// connection error.
	Timeout Duration `json:"timeout,omitempty"`
	// WorkerGroup is the worker group whose workers make the calls
	// (default DefaultGroup): the steps go to GroupQueue(WorkerGroup).
	WorkerGroup string `json:"worker_group,omitempty"`
}

// RetrySpec is a retry policy as a definition writes it (RetryPolicy).
type RetrySpec struct {
	Backoff    Duration `json:"backoff,omitempty"`
	MaxBackoff Duration `json:"max_backoff,omitempty"`
	Attempts   int32    `json:"attempts,omitempty"`
	Deadline   Duration `json:"deadline,omitempty"`
}

// Policy is s as the saga model's RetryPolicy.
func (s RetrySpec) Policy() RetryPolicy {
	return RetryPolicy{Backoff: s.Backoff.Std(), MaxBackoff: s.MaxBackoff.Std(), Attempts: s.Attempts, Deadline: s.Deadline.Std()}
}

// DefaultTimeout bounds each attempt of a call when the definition sets
// no timeout.
const DefaultTimeout = 30 * time.Second

// StepSpec is an element of a definition's steps: a step (Name, Call and
// an optional Compensate), or a parallel group (Parallel) of steps.
type StepSpec struct {
	Name string `json:"name,omitempty"`
	// Call is the forward call.
	Call *Call `json:"call,omitempty"`
	// Compensate is the call that undoes a completed Call; none when the
	// step needs no undoing.
	Compensate *Call `json:"compensate,omitempty"`
	// Parallel are the steps of a group, run at the same time.
	Parallel []StepSpec `json:"parallel,omitempty"`
}

// Call is an HTTP call of a definition. Its URL, header values and body
// are templates: ${input.a.b} reads the saga's input, ${steps.NAME.status},
// ${steps.NAME.headers.h} and ${steps.NAME.body.a.b} an earlier step's
// answer, and, in a compensation only, ${result.…} the answer of the
// forward call it undoes.
type Call struct {
	// Method is GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS.
	Method string `json:"method"`
	URL    string `json:"url"`
	// Headers are the request's headers ("Host" sets its host).
	// Idempotency-Key and X-Strand-Transaction are Strand's.
	Headers map[string]string `json:"headers,omitempty"`
	// Body is the request's body: a JSON string is a text template, sent
	// as is once rendered; any other JSON value is a JSON body whose
	// strings are templates (a string that is one reference and nothing
	// else takes the referenced value, of any JSON type).
	Body json.RawMessage `json:"body,omitempty"`
	// Success are the statuses that complete the call (default 2xx).
	Success []StatusRange `json:"success,omitempty"`
	// Retryable are the statuses, and "connection" (no answer at all),
	// that fail the call for now: it is retried later by the retry
	// policy (default 429, 502, 503, 504 and connection). Any other
	// answer fails it for good.
	Retryable []StatusRange `json:"retryable,omitempty"`
}

// Default answer classes of a call.
var (
	DefaultSuccess   = []StatusRange{{200, 299}}
	DefaultRetryable = []StatusRange{{429, 429}, {502, 502}, {503, 503}, {504, 504}, Connection}
)

// Connection stands, in a call's retryable list, for a call that got no
// answer: the service could not be reached, the connection broke, or the
// answer did not come in time.
var Connection = StatusRange{}

// StatusRange is a range of HTTP statuses: one status ("404"), a class
// ("5xx"), a range ("500-504"), or Connection ("connection").
type StatusRange struct {
	From int `json:"from"`
	To   int `json:"to"`
}

// Contains reports whether status is in r.
func (r StatusRange) Contains(status int) bool {
	return r != Connection && r.From <= status && status <= r.To
}

// String writes r as a definition does: "404", "5xx", "500-504" or
// "connection".
func (r StatusRange) String() string {
	switch {
	case r == Connection:
		return "connection"
	case r.From == r.To:
		return strconv.Itoa(r.From)
	case r.From%100 == 0 && r.To == r.From+99:
		return strconv.Itoa(r.From/100) + "xx"
	}
	return fmt.Sprintf("%d-%d", r.From, r.To)
}

// MarshalText writes r as a definition does.
func (r StatusRange) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads "404", "5xx", "500-504" or "connection".
func (r *StatusRange) UnmarshalText(b []byte) error {
	v, err := ParseStatusRange(string(b))
	if err == nil {
		*r = v
	}
	return err
}

var statusClass = regexp.MustCompile(`^[1-5][xX][xX]$`)

// ParseStatusRange reads a status spec: "404", "5xx", "500-504" or
// "connection".
func ParseStatusRange(s string) (StatusRange, error) {
	s = strings.TrimSpace(s)
	status := func(t string) (int, error) {
		n, err := strconv.Atoi(strings.TrimSpace(t))
		if err != nil || n < 100 || n > 599 {
			return 0, fmt.Errorf("%q is not an HTTP status (100 to 599)", t)
		}
		return n, nil
	}
	switch {
	case strings.EqualFold(s, "connection"):
		return Connection, nil
	case statusClass.MatchString(s):
		c := int(s[0]-'0') * 100
		return StatusRange{c, c + 99}, nil
	case strings.Contains(s, "-"):
		a, b, _ := strings.Cut(s, "-")
		from, err := status(a)
		if err != nil {
			return StatusRange{}, err
		}
		to, err := status(b)
		if err != nil {
			return StatusRange{}, err
		}
		if to < from {
			return StatusRange{}, fmt.Errorf("%q: the range ends before it begins", s)
		}
		return StatusRange{from, to}, nil
	}
	n, err := status(s)
	if err != nil {
		return StatusRange{}, fmt.Errorf("%w: want a status (404), a class (5xx), a range (500-504) or connection", err)
	}
	return StatusRange{n, n}, nil
}

// matchStatus reports whether a status is in one of the ranges.
func matchStatus(ranges []StatusRange, status int) bool {
	for _, r := range ranges {
		if r.Contains(status) {
			return true
		}
	}
	return false
}

// Duration is a time.Duration written as text ("90s", "1h30m").
type Duration time.Duration

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// MarshalText writes d as Go writes durations.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads a duration such as 90s or 1h30m; it may not be
// negative.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("want a duration such as 90s or 1h30m, got %q", b)
	}
	if v < 0 {
		return fmt.Errorf("a duration may not be negative, got %q", b)
	}
	*d = Duration(v)
	return nil
}

// Templates.
//
// A template is text with references: ${input}, ${input.a.b},
// ${steps.NAME}, ${steps.NAME.status}, ${steps.NAME.headers.h},
// ${steps.NAME.body.a.0.b}, ${result.…} (a compensation's forward
// answer). $${ is a literal ${. A path's numeric part indexes a list.

// Roots of a template's references.
const (
	refInput  = "input"
	refSteps  = "steps"
	refResult = "result"
)

// ref is a reference of a template.
type ref struct {
	// raw is what is between ${ and }, trimmed: "steps.reserve.body.id".
	raw  string
	root string
	// step is the step of a steps reference.
	step string
	// path is what follows input, steps.NAME or result.
	path []string
	// off is the reference's byte offset in the template ("$").
	off int
}

// segment is a piece of a template: text, or a reference.
type segment struct {
	text string
	ref  *ref
}

// templateError is a template's syntax error at a byte offset.
type templateError struct {
	off int
	msg string
}

func (e *templateError) Error() string { return e.msg }

var pathPart = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// parseTemplate splits s into text and references, checking their
// syntax (not what they name).
func parseTemplate(s string) ([]segment, error) {
	var out []segment
	var text strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			text.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return nil, &templateError{i, "a reference ${ is not closed with }"}
			}
			r, err := parseRef(strings.TrimSpace(s[i+2:i+2+end]), i)
			if err != nil {
				return nil, err
			}
			if text.Len() > 0 {
				out = append(out, segment{text: text.String()})
				text.Reset()
			}
			out = append(out, segment{ref: r})
			i += end + 3
		default:
			text.WriteByte(s[i])
			i++
		}
	}
	if text.Len() > 0 {
		out = append(out, segment{text: text.String()})
	}
	return out, nil
}

func parseRef(raw string, off int) (*ref, error) {
	if raw == "" {
		return nil, &templateError{off, "an empty reference ${}"}
	}
	parts := strings.Split(raw, ".")
	for _, p := range parts {
		if !pathPart.MatchString(p) {
			return nil, &templateError{off, fmt.Sprintf("${%s}: a reference is names and list indexes separated by dots, such as ${input.order.id} or ${steps.reserve.body.items.0}", raw)}
		}
	}
	r := &ref{raw: raw, root: parts[0], off: off}
	switch r.root {
	case refInput, refResult:
		r.path = parts[1:]
	case refSteps:
		if len(parts) < 2 {
			return nil, &templateError{off, fmt.Sprintf("${%s}: name the step: ${steps.NAME.body…}", raw)}
		}
		r.step, r.path = parts[1], parts[2:]
	default:
		return nil, &templateError{off, fmt.Sprintf("${%s}: unknown reference: want ${input…}, ${steps.NAME…} or, in a compensation, ${result…}", raw)}
	}
	return r, nil
}

// checkAnswerPath checks the path of a reference to an answer (a step's
// or a compensation's result): status, headers.NAME or body….
func checkAnswerPath(what string, path []string) error {
	if len(path) == 0 {
		return nil
	}
	switch path[0] {
	case "status":
		if len(path) > 1 {
			return fmt.Errorf("%s.status is a number: it has no fields", what)
		}
	case "headers":
		if len(path) > 2 {
			return fmt.Errorf("%s.headers.%s is text: it has no fields", what, path[1])
		}
	case "body":
	default:
		return fmt.Errorf("%s.%s: an answer has status, headers and body", what, path[0])
	}
	return nil
}

// resolver gives a reference's value: a JSON value decoded with numbers
// kept as json.Number.
type resolver func(r *ref) (any, error)

// render renders a text template. In a URL (inURL), a value that begins
// the template (a base URL) is inserted as it is; any other is
// percent-encoded for its place: in the path, all but letters, digits,
// '-', '.', '_', '~', '/' and the characters a path segment allows; in
// the query (after a '?'), all but letters, digits, '-', '.', '_' and '~'.
func render(segs []segment, resolve resolver, inURL bool) (string, error) {
	var b strings.Builder
	query := false
	for i, s := range segs {
		if s.ref == nil {
			b.WriteString(s.text)
			query = query || strings.ContainsAny(s.text, "?#")
			continue
		}
		v, err := resolve(s.ref)
		if err != nil {
			return "", err
		}
		t, err := textOf(v)
		if err != nil {
			return "", fmt.Errorf("${%s}: %w", s.ref.raw, err)
		}
		switch {
		case !inURL || i == 0:
		case query:
			t = strings.ReplaceAll(url.QueryEscape(t), "+", "%20")
		default:
			t = strings.ReplaceAll(url.PathEscape(t), "%2F", "/")
		}
		b.WriteString(t)
	}
	return b.String(), nil
}

// textOf is a value as text: a string as it is, nothing for null, other
// values as compact JSON.
func textOf(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case nil:
		return "", nil
	case json.Number:
		return x.String(), nil
	case bool:
		return strconv.FormatBool(x), nil
	}
	b, err := marshal(v)
	return string(b), err
}

// marshal is json.Marshal without HTML escaping.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// decodeJSON decodes one JSON value, numbers kept as json.Number.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

// walkBody calls fn for each string of a JSON body, in order, and
// replaces it with what fn returns.
func walkBody(v any, fn func(s string) (any, error)) (any, error) {
	switch x := v.(type) {
	case string:
		return fn(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range sortedKeys(x) { // in order: the first error is the same on every replay
			r, err := walkBody(x[k], fn)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := walkBody(e, fn)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

// bodyText reports whether a call's body is a text template, and its
// text.
func bodyText(body json.RawMessage) (string, bool) {
	var s string
	if len(body) > 0 && body[0] == '"' && json.Unmarshal(body, &s) == nil {
		return s, true
	}
	return "", false
}

// callRefs returns every reference of c's templates, in a fixed order.
func callRefs(c *Call) ([]*ref, error) {
	var out []*ref
	add := func(s string) error {
		segs, err := parseTemplate(s)
		if err != nil {
			return err
		}
		for _, sg := range segs {
			if sg.ref != nil {
				out = append(out, sg.ref)
			}
		}
		return nil
	}
	if err := add(c.URL); err != nil {
		return nil, err
	}
	for _, k := range sortedKeys(c.Headers) {
		if err := add(c.Headers[k]); err != nil {
			return nil, err
		}
	}
	if len(c.Body) > 0 {
		if s, ok := bodyText(c.Body); ok {
			if err := add(s); err != nil {
				return nil, err
			}
		} else {
			v, err := decodeJSON(c.Body)
			if err != nil {
				return nil, err
			}
			var strs []string
			collectStrings(v, &strs)
			for _, s := range strs {
				if err := add(s); err != nil {
					return nil, err
				}
			}
		}
	}
	return out, nil
}

// collectStrings appends v's strings in a fixed order (map keys sorted).
func collectStrings(v any, out *[]string) {
	switch x := v.(type) {
	case string:
		*out = append(*out, x)
	case map[string]any:
		for _, k := range sortedKeys(x) {
			collectStrings(x[k], out)
		}
	case []any:
		for _, e := range x {
			collectStrings(e, out)
		}
	}
}

// renderCall renders c into a request with resolve.
func renderCall(c *Call, resolve resolver) (Request, error) {
	req := Request{Method: c.Method}
	segs, err := parseTemplate(c.URL)
	if err != nil {
		return req, fmt.Errorf("url: %w", err)
	}
	if req.URL, err = render(segs, resolve, true); err != nil {
		return req, fmt.Errorf("url: %w", err)
	}
	if err := checkURL(req.URL); err != nil {
		return req, fmt.Errorf("url: %w", err)
	}
	if len(c.Headers) > 0 {
		req.Headers = make(map[string]string, len(c.Headers))
		for _, k := range sortedKeys(c.Headers) {
			segs, err := parseTemplate(c.Headers[k])
			if err != nil {
				return req, fmt.Errorf("header %s: %w", k, err)
			}
			if req.Headers[k], err = render(segs, resolve, false); err != nil {
				return req, fmt.Errorf("header %s: %w", k, err)
			}
			if strings.ContainsAny(req.Headers[k], "\r\n") {
				return req, fmt.Errorf("header %s: a header value may not contain a line break", k)
			}
		}
	}
	if len(c.Body) == 0 {
		return req, nil
	}
	contentType := "application/json"
	if s, ok := bodyText(c.Body); ok {
		segs, err := parseTemplate(s)
		if err != nil {
			return req, fmt.Errorf("body: %w", err)
		}
		if req.Body, err = render(segs, resolve, false); err != nil {
			return req, fmt.Errorf("body: %w", err)
		}
		if !json.Valid([]byte(req.Body)) {
			contentType = "text/plain; charset=utf-8"
		}
	} else {
		v, err := decodeJSON(c.Body)
		if err != nil {
			return req, fmt.Errorf("body: %w", err)
		}
		v, err = walkBody(v, func(s string) (any, error) {
			segs, err := parseTemplate(s)
			if err != nil {
				return nil, err
			}
			if len(segs) == 1 && segs[0].ref != nil {
				return resolve(segs[0].ref)
			}
			return render(segs, resolve, false)
		})
		if err != nil {
			return req, fmt.Errorf("body: %w", err)
		}
		b, err := marshal(v)
		if err != nil {
			return req, fmt.Errorf("body: %w", err)
		}
		req.Body = string(b)
	}
	if !hasHeader(req.Headers, "Content-Type") {
		if req.Headers == nil {
			req.Headers = map[string]string{}
		}
		req.Headers["Content-Type"] = contentType
	}
	return req, nil
}

// checkURL checks that a rendered URL is an absolute http or https URL.
func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %w", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("%q: want an absolute http:// or https:// URL", s)
	}
	return nil
}

func hasHeader(h map[string]string, name string) bool {
	for k := range h {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

// lookup follows path into v, a decoded JSON value; what names v in
// errors.
func lookup(v any, path []string, what string) (any, error) {
	for _, p := range path {
		switch x := v.(type) {
		case map[string]any:
			e, ok := x[p]
			if !ok {
				return nil, fmt.Errorf("%s has no field %q", what, p)
			}
			v = e
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(x) {
				return nil, fmt.Errorf("%s is a list of %d: no element %q", what, len(x), p)
			}
			v = x[i]
		case nil:
			return nil, fmt.Errorf("%s is null: it has no field %q", what, p)
		default:
			return nil, fmt.Errorf("%s is %s: it has no field %q", what, kindOf(x), p)
		}
		what += "." + p
	}
	return v, nil
}

func kindOf(v any) string {
	switch v.(type) {
	case string:
		return "text"
	case json.Number:
		return "a number"
	case bool:
		return "true or false"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("%T", v)
}

// answerValue is a reference's value in an answer: what names the answer
// ("steps.reserve", "result").
func answerValue(a *Answer, path []string, what string) (any, error) {
	if len(path) == 0 {
		b, err := json.Marshal(a)
		if err != nil {
			return nil, err
		}
		return decodeJSON(b)
	}
	switch path[0] {
	case "status":
		return json.Number(strconv.Itoa(a.Status)), nil
	case "headers":
		if len(path) == 1 {
			m := make(map[string]any, len(a.Headers))
			for k, v := range a.Headers {
				m[k] = v
			}
			return m, nil
		}
		v, ok := a.Headers[strings.ToLower(path[1])]
		if !ok {
			return nil, fmt.Errorf("%s.headers has no %q header", what, path[1])
		}
		return v, nil
	case "body":
		if len(a.Body) == 0 {
			if len(path) == 1 {
				return "", nil
			}
			return nil, fmt.Errorf("%s.body is empty: it has no field %q", what, path[1])
		}
		body, err := decodeJSON(a.Body)
		if err != nil {
			return nil, fmt.Errorf("%s.body: %w", what, err)
		}
		return lookup(body, path[1:], what+".body")
	}
	return nil, fmt.Errorf("%s.%s: an answer has status, headers and body", what, path[0])
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
