package task

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/theory/jsonpath"
)

// HTTP is an HTTP task: one request, whose answer is checked and may set
// output parameters.
type HTTP struct {
	// Method is the request's method (default GET).
	Method string
	// URL is the request's URL.
	URL string
	// Headers are the request's headers; "Host" sets the request's host.
	Headers map[string]string
	// Body is the request's body; none when empty.
	Body string
	// ExpectStatus lists the acceptable status codes (default: any 2xx).
	ExpectStatus []int
	// BodyContains, when set, must be in the response body.
	BodyContains string
	// BodyNotContains, when set, must not be in the response body.
	BodyNotContains string
	// Outputs maps an output parameter name to a JSONPath (RFC 9535, e.g.
	// "$.data.id") into the JSON response body. A path selecting one string
	// gives that string; one other value gives its compact JSON; several
	// values give the compact JSON array of them.
	Outputs map[string]string
	// Timeout bounds the request, reading the response included (default 60s).
	Timeout time.Duration
}

// HTTPResult is what an HTTP task got.
type HTTPResult struct {
	// Status is the response's status code (0 when none came).
	Status int
	// Outputs are the output parameters taken from the response body.
	Outputs map[string]string
}

// ConditionError is the error of a response that failed the task's
// success conditions.
type ConditionError struct {
	// Status is the response's status code.
	Status int
	// Reason says which condition failed.
	Reason string
}

// Error implements error.
func (e *ConditionError) Error() string {
	return fmt.Sprintf("http task: condition failed (status %d): %s", e.Status, e.Reason)
}

const (
	// defaultHTTPTimeout is HTTP.Timeout's default.
	defaultHTTPTimeout = 60 * time.Second
	// maxResponseBody caps the response body read.
	maxResponseBody = 16 << 20
	// maxLoggedBody caps a body in the log.
	maxLoggedBody = 64 << 10
)

// CheckJSONPath reports whether expr is a valid RFC 9535 JSONPath query, so
// that a definition's outputs can be checked before anything runs.
func CheckJSONPath(expr string) error {
	_, err := parseJSONPath(expr)
	return err
}

// parseJSONPath parses expr, saying which expression failed.
func parseJSONPath(expr string) (*jsonpath.Path, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, errors.New("JSONPath: empty expression")
	}
	p, err := jsonpath.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("JSONPath %q: %w", expr, err)
	}
	return p, nil
}

// RunHTTP sends h's request with client (http.DefaultClient when nil) and
// checks the response: its status (ExpectStatus, default any 2xx) and body
// (BodyContains, BodyNotContains). A failed condition returns the result
// and a *ConditionError; a transport error is returned wrapped. When the
// conditions hold, Outputs are taken from the JSON body; a path that selects
// nothing is an error naming the output.
//
// The request and the response go to log: credentials in headers and in
// the URL are masked, bodies are cut at 64 KiB. At most 16 MiB of the
// response body is read.
func RunHTTP(ctx context.Context, client *http.Client, h HTTP, log io.Writer) (HTTPResult, error) {
	if client == nil {
		client = http.DefaultClient
	}
	method := h.Method
	if method == "" {
		method = http.MethodGet
	}
	paths := make(map[string]*jsonpath.Path, len(h.Outputs))
	for _, name := range sortedKeys(h.Outputs) {
		p, err := parseJSONPath(h.Outputs[name])
		if err != nil {
			return HTTPResult{}, fmt.Errorf("http task: output %q: %w", name, err)
		}
		paths[name] = p
	}
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = defaultHTTPTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var body io.Reader
	if h.Body != "" {
		body = strings.NewReader(h.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.URL, body)
	if err != nil {
		return HTTPResult{}, fmt.Errorf("http task: request: %w", err)
	}
	for _, k := range sortedKeys(h.Headers) {
		if strings.EqualFold(k, "Host") {
			req.Host = h.Headers[k]
			continue
		}
		req.Header.Set(k, h.Headers[k])
	}

	lg := &errWriter{w: log}
	lg.printf("> %s %s\n", method, maskURL(req.URL))
	if req.Host != "" {
		lg.printf("> Host: %s\n", req.Host)
	}
	logHeaders(lg, "> ", req.Header)
	if h.Body != "" {
		lg.printf(">\n")
		logBody(lg, []byte(h.Body))
	}

	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		lg.printf("request failed after %v: %v\n", time.Since(start).Round(time.Millisecond), err)
		return HTTPResult{}, fmt.Errorf("http task: %s %s: %w", method, maskURL(req.URL), err)
	}
	defer resp.Body.Close()
	respBody, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBody+1))
	truncated := len(respBody) > maxResponseBody
	if truncated {
		respBody = respBody[:maxResponseBody]
	}
	res := HTTPResult{Status: resp.StatusCode}
	lg.printf("< %s %s (%v)\n", resp.Proto, resp.Status, time.Since(start).Round(time.Millisecond))
	logHeaders(lg, "< ", resp.Header)
	lg.printf("<\n")
	logBody(lg, respBody)
	if truncated {
		lg.printf("(the response body is longer than %d bytes; the rest was not read)\n", maxResponseBody)
	}
	if err != nil {
		lg.printf("reading the response body failed: %v\n", err)
		return res, fmt.Errorf("http task: %s %s: read response body: %w", method, maskURL(req.URL), err)
	}

	if reason := checkConditions(h, resp.StatusCode, respBody); reason != "" {
		lg.printf("condition failed: %s\n", reason)
		return res, &ConditionError{Status: resp.StatusCode, Reason: reason}
	}
	if len(paths) > 0 {
		if truncated {
			return res, fmt.Errorf("http task: outputs: the response body is longer than %d bytes", maxResponseBody)
		}
		out, err := jsonOutputs(respBody, h.Outputs, paths)
		if err != nil {
			lg.printf("%v\n", err)
			return res, fmt.Errorf("http task: %w", err)
		}
		res.Outputs = out
		for _, name := range sortedKeys(out) {
			lg.printf("output %s = %s\n", name, out[name])
		}
	}
	if lg.err != nil {
		return res, fmt.Errorf("http task: write log: %w", lg.err)
	}
	return res, nil
}

// checkConditions returns why the response fails h's conditions, or "".
func checkConditions(h HTTP, status int, body []byte) string {
	if len(h.ExpectStatus) == 0 {
		if status < 200 || status > 299 {
			return fmt.Sprintf("status %d is not 2xx", status)
		}
	} else if !slices.Contains(h.ExpectStatus, status) {
		return fmt.Sprintf("status %d is not one of %v", status, h.ExpectStatus)
	}
	if h.BodyContains != "" && !bytes.Contains(body, []byte(h.BodyContains)) {
		return fmt.Sprintf("the body does not contain %q", h.BodyContains)
	}
	if h.BodyNotContains != "" && bytes.Contains(body, []byte(h.BodyNotContains)) {
		return fmt.Sprintf("the body contains %q", h.BodyNotContains)
	}
	return ""
}

// jsonOutputs evaluates paths, by output name, on the JSON document body.
func jsonOutputs(body []byte, exprs map[string]string, paths map[string]*jsonpath.Path) (map[string]string, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber() // numbers keep their text: no float rounding of big ids
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("outputs: the response body is not JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("outputs: the response body is not one JSON value: data after its end")
	}
	out := make(map[string]string, len(paths))
	for _, name := range sortedKeys(exprs) {
		nodes := paths[name].Select(doc)
		var v any
		switch len(nodes) {
		case 0:
			return nil, fmt.Errorf("output %q: JSONPath %q selects nothing in the response body", name, exprs[name])
		case 1:
			v = nodes[0]
		default:
			v = []any(nodes)
		}
		if s, ok := v.(string); ok {
			out[name] = s
			continue
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return nil, fmt.Errorf("output %q: encode JSON: %w", name, err)
		}
		out[name] = strings.TrimSuffix(b.String(), "\n")
	}
	return out, nil
}

// secretWords mark a header or query parameter whose value is masked in
// the log.
var secretWords = []string{"authorization", "token", "secret", "password", "passwd", "cookie", "api-key", "apikey", "api_key"}

// isSecret tells whether the header or parameter name's value is masked.
func isSecret(name string) bool {
	name = strings.ToLower(name)
	for _, w := range secretWords {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// maskURL is u for the log: its password and secret query parameters
// masked.
func maskURL(u *url.URL) string {
	m := *u
	if m.User != nil {
		if _, ok := m.User.Password(); ok {
			m.User = url.UserPassword(m.User.Username(), "***")
		}
	}
	if m.RawQuery != "" {
		parts := strings.Split(m.RawQuery, "&")
		for i, part := range parts {
			k, _, ok := strings.Cut(part, "=")
			if name, err := url.QueryUnescape(k); ok && err == nil && isSecret(name) {
				parts[i] = k + "=***"
			}
		}
		m.RawQuery = strings.Join(parts, "&")
	}
	return m.String()
}

// logHeaders writes h's headers, sorted, with prefix; secret ones masked.
func logHeaders(lg *errWriter, prefix string, h http.Header) {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		for _, v := range h[k] {
			if isSecret(k) {
				v = "***"
			}
			lg.printf("%s%s: %s\n", prefix, k, v)
		}
	}
}

// logBody writes body, cut at maxLoggedBody bytes (at a character's start)
// with a note of how much was cut.
func logBody(lg *errWriter, body []byte) {
	if len(body) == 0 {
		lg.printf("(empty body)\n")
		return
	}
	shown := body
	if len(shown) > maxLoggedBody {
		n := maxLoggedBody
		for n > maxLoggedBody-utf8.UTFMax && !utf8.RuneStart(body[n]) {
			n--
		}
		shown = body[:n]
	}
	lg.write(shown)
	if shown[len(shown)-1] != '\n' {
		lg.write([]byte("\n"))
	}
	if cut := len(body) - len(shown); cut > 0 {
		lg.printf("(%d more bytes of the body not logged)\n", cut)
	}
}

// errWriter writes to w until a write fails, and keeps that error.
type errWriter struct {
	w   io.Writer
	err error
}

// write writes p unless an earlier write failed.
func (e *errWriter) write(p []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(p)
	}
}

// printf writes a formatted text unless an earlier write failed.
func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
