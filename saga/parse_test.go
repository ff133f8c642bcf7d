package saga_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/saga"
)

const goodSaga = `name: order
description: reserve, charge, ship; undone in reverse
options:
  retry: {backoff: 50ms, max_backoff: 200ms, deadline: 1m}
  compensation_retry: {backoff: 50ms, attempts: 3}
  timeout: 5s
  worker_group: payments
steps:
  - name: reserve
    call:
      method: post
      url: http://stock.local/reservations?sku=${input.sku}
      headers: {Authorization: 'Bearer ${input.token}'}
      body: {sku: '${input.sku}', quantity: '${input.quantity}', note: 'for ${input.order}'}
    compensate:
      method: DELETE
      url: http://stock.local/reservations/${result.body.id}
      success: [2xx, 404]
  - parallel:
      - name: charge
        call:
          method: POST
          url: ${input.payments}/charges
          body: '{"reservation": "${steps.reserve.body.id}"}'
          success: 201
          retryable: [429, 5xx, connection]
        compensate: {method: POST, url: 'http://pay.local/refunds/${result.headers.location}'}
      - name: notify
        call: {method: POST, url: 'http://mail.local/send', body: 'order ${input.order} reserved'}
  - name: ship
    call: {method: PUT, url: 'http://ship.local/orders/${input.order}', body: {charge: '${steps.charge.body}'}}
`

func TestParseDefinition(t *testing.T) {
	d, err := saga.Parse([]byte(goodSaga))
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "order" || len(d.Steps) != 3 || d.Options.Timeout.Std() != 5*time.Second || d.Options.WorkerGroup != "payments" {
		t.Fatalf("parsed %+v", d)
	}
	if p := d.Options.Retry.Policy(); p.Backoff != 50*time.Millisecond || p.MaxBackoff != 200*time.Millisecond || p.Deadline != time.Minute {
		t.Fatalf("retry %+v", p)
	}
	if d.Options.CompensationRetry.Attempts != 3 {
		t.Fatalf("compensation retry %+v", d.Options.CompensationRetry)
	}
	r := d.Steps[0]
	if r.Name != "reserve" || r.Call.Method != "POST" || r.Compensate == nil || r.Compensate.Method != "DELETE" {
		t.Fatalf("reserve %+v", r)
	}
	// Defaults; status specs read and written as a definition writes them.
	if fmt.Sprint(r.Call.Success) != "[2xx]" || fmt.Sprint(r.Call.Retryable) != "[429 502 503 504 connection]" || fmt.Sprint(r.Compensate.Success) != "[2xx 404]" {
		t.Fatalf("reserve's statuses %v %v %v", r.Call.Success, r.Call.Retryable, r.Compensate.Success)
	}
	if string(r.Call.Body) != `{"note":"for ${input.order}","quantity":"${input.quantity}","sku":"${input.sku}"}` {
		t.Fatalf("a JSON body: %s", r.Call.Body)
	}
	g := d.Steps[1]
	if len(g.Parallel) != 2 || g.Parallel[0].Name != "charge" || fmt.Sprint(g.Parallel[0].Call.Success) != "[201]" ||
		fmt.Sprint(g.Parallel[0].Call.Retryable) != "[429 5xx connection]" || g.Parallel[1].Compensate != nil {
		t.Fatalf("group %+v", g)
	}
	if string(g.Parallel[1].Call.Body) != `"order ${input.order} reserved"` {
		t.Fatalf("a text body: %s", g.Parallel[1].Call.Body)
	}
	// JSON is accepted as well.
	if _, err := saga.Parse([]byte(`{"name": "j", "steps": [{"name": "a", "call": {"method": "GET", "url": "http://x.local/${input.id}"}}]}`)); err != nil {
		t.Fatal(err)
	}
}

// TestParseErrors: each bad definition is refused with the place of what
// is wrong.
func TestParseErrors(t *testing.T) {
	step := func(s string) string { return "name: x\nsteps:\n" + s }
	for _, tc := range []struct {
		name, text string
		want       string // in the error, with the line and column
	}{
		{"yaml syntax", "name: x\nsteps: [\n  {name: a", "line 2"},
		{"json syntax", "{\"name\": \"x\",\n \"steps\": [}", "line 2, column 12"},
		{"empty", "", "line 1, column 1: the definition is empty"},
		{"missing steps", "name: x\n", "line 1, column 1: steps: missing"},
		{"no steps", "name: x\nsteps: []\n", "line 2, column 8: steps: a saga has at least one step"},
		{"bad name", "name: 'no spaces'\nsteps:\n  - {name: a, call: {method: GET, url: 'http://x.local'}}\n", "line 1, column 7: name: \"no spaces\" is not a name"},
		{"unknown field", step("  - name: a\n    call: {method: GET, url: 'http://x.local'}\n    compensation: {method: GET, url: 'http://x.local'}\n"),
			"line 5, column 5: steps[0].compensation: unknown field"},
		{"unknown call field", step("  - name: a\n    call: {method: GET, url: 'http://x.local', expect: 200}\n"), "line 4, column 48: steps[0].call.expect: unknown field"},
		{"missing call", step("  - name: a\n"), "line 3, column 5: steps[0].call: missing"},
		{"missing name", step("  - call: {method: GET, url: 'http://x.local'}\n"), "line 3, column 5: steps[0].name: missing"},
		{"bad step name", step("  - {name: a.b, call: {method: GET, url: 'http://x.local'}}\n"), "line 3, column 12: steps[0].name: \"a.b\" is not a step name"},
		{"duplicate", step("  - {name: a, call: {method: GET, url: 'http://x.local'}}\n  - parallel:\n      - {name: a, call: {method: GET, url: 'http://x.local'}}\n"),
			"line 5, column 16: steps[1].parallel[0].name: step \"a\" is defined twice"},
		{"unknown method", step("  - {name: a, call: {method: FETCH, url: 'http://x.local'}}\n"), "line 3, column 30: steps[0].call.method: unknown method \"FETCH\""},
		{"missing method", step("  - {name: a, call: {url: 'http://x.local'}}\n"), "line 3, column 21: steps[0].call.method: missing"},
		{"relative url", step("  - {name: a, call: {method: GET, url: '/orders/${input.id}'}}\n"), "line 3, column 40: steps[0].call.url: \"/orders/x\": want an absolute http:// or https:// URL"},
		{"ftp url", step("  - {name: a, call: {method: GET, url: 'ftp://x.local'}}\n"), "steps[0].call.url: \"ftp://x.local\": want an absolute"},
		{"unclosed reference", step("  - name: a\n    call:\n      method: GET\n      url: http://x.local/${input.id\n"),
			"line 6, column 27: steps[0].call.url: a reference ${ is not closed with }"},
		{"unknown root", step("  - name: a\n    call:\n      method: GET\n      url: http://x.local/${params.id}\n"),
			"line 6, column 27: steps[0].call.url: ${params.id}: unknown reference"},
		{"bad path", step("  - name: a\n    call:\n      method: GET\n      url: 'http://x.local/${input.a b}'\n"),
			"line 6, column 28: steps[0].call.url: ${input.a b}: a reference is names"},
		{"later step", step("  - name: a\n    call: {method: GET, url: 'http://x.local/${steps.b.body.id}'}\n  - {name: b, call: {method: GET, url: 'http://x.local'}}\n"),
			"line 4, column 46: steps[0].call.url: ${steps.b.body.id}: step \"b\" runs after \"a\""},
		{"unknown step", step("  - name: a\n    call: {method: GET, url: 'http://x.local/${steps.z.status}'}\n"),
			"line 4, column 46: steps[0].call.url: ${steps.z.status}: unknown step \"z\""},
		{"own answer", step("  - name: a\n    call: {method: GET, url: 'http://x.local/${steps.a.status}'}\n"), "a step cannot read its own answer"},
		{"same group", step("  - parallel:\n    - {name: a, call: {method: GET, url: 'http://x.local'}}\n    - {name: b, call: {method: GET, url: 'http://x.local', headers: {X-A: '${steps.a.status}'}}}\n"),
			"line 5, column 76: steps[0].parallel[1].call.headers.X-A: ${steps.a.status}: step \"a\" runs at the same time as \"b\""},
		{"result in a forward call", step("  - name: a\n    call: {method: GET, url: 'http://x.local', body: {id: '${result.body.id}'}}\n"),
			"line 4, column 60: steps[0].call.body.id: ${result.body.id}: ${result…} is the answer of the call a compensation undoes"},
		{"own step in a compensation", step("  - name: a\n    call: {method: GET, url: 'http://x.local'}\n    compensate: {method: DELETE, url: 'http://x.local/${steps.a.body.id}'}\n"),
			"line 5, column 55: steps[0].compensate.url: ${steps.a.body.id}: a compensation reads its own step's answer as ${result…}"},
		{"bad answer path", step("  - {name: a, call: {method: GET, url: 'http://x.local'}}\n  - {name: b, call: {method: GET, url: 'http://x.local/${steps.a.code}'}}\n"),
			"steps[1].call.url: ${steps.a.code}: steps.a.code: an answer has status, headers and body"},
		{"status has no fields", step("  - name: a\n    call: {method: GET, url: 'http://x.local'}\n    compensate: {method: GET, url: 'http://x.local/${result.status.x}'}\n"),
			"result.status is a number: it has no fields"},
		{"bad status", step("  - {name: a, call: {method: GET, url: 'http://x.local', success: [2xx, 700]}}\n"), "line 3, column 73: steps[0].call.success[1]: \"700\" is not an HTTP status"},
		{"bad range", step("  - {name: a, call: {method: GET, url: 'http://x.local', retryable: 504-500}}\n"), "steps[0].call.retryable: \"504-500\": the range ends before it begins"},
		{"connection success", step("  - {name: a, call: {method: GET, url: 'http://x.local', success: [connection]}}\n"), "connection (no answer) may be retryable, never a success"},
		{"overlap", step("  - {name: a, call: {method: GET, url: 'http://x.local', success: [2xx, 429]}}\n"), "line 3, column 67: steps[0].call.success: status 429 is both a success and retryable"},
		{"reserved header", step("  - {name: a, call: {method: GET, url: 'http://x.local', headers: {Idempotency-Key: k}}}\n"),
			"line 3, column 85: steps[0].call.headers.Idempotency-Key: Idempotency-Key is set by Strand"},
		{"bad duration", "name: x\noptions: {timeout: soon}\nsteps:\n  - {name: a, call: {method: GET, url: 'http://x.local'}}\n", "line 2, column 20: options.timeout: want a duration"},
		{"compensation deadline", "name: x\noptions:\n  compensation_retry: {deadline: 1m}\nsteps:\n  - {name: a, call: {method: GET, url: 'http://x.local'}}\n",
			"line 3, column 34: options.compensation_retry.deadline: a compensation has no deadline"},
		{"bad group", "name: x\noptions: {worker_group: 'a b'}\nsteps:\n  - {name: a, call: {method: GET, url: 'http://x.local'}}\n", "line 2, column 25: options.worker_group"},
		{"group with a name", step("  - name: g\n    parallel:\n      - {name: a, call: {method: GET, url: 'http://x.local'}}\n"),
			"line 3, column 5: steps[0].name: a parallel group has nothing but parallel"},
		{"nested group", step("  - parallel:\n      - parallel: []\n"), "line 4, column 9: steps[0].parallel[0]: a parallel group may not hold another"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := saga.Parse([]byte(tc.text))
			var de *saga.DefinitionError
			if !errors.As(err, &de) || !errors.Is(err, api.ErrInvalidArgument) {
				t.Fatalf("got %v; want a *DefinitionError, an invalid argument", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %q; want it to contain %q", err, tc.want)
			}
			for _, p := range de.Problems {
				if p.Line == 0 {
					t.Errorf("problem without a line: %+v", p)
				}
			}
		})
	}
}

// TestParseReportsEveryProblem: a definition with problems of every kind
// (fields, names, references, URLs) gets each reported at once, each with
// its line and column, not only the first kind found.
func TestParseReportsEveryProblem(t *testing.T) {
	text := `name: 'bad name'
options:
  timeout: soon
  worker_group: 'a b'
steps:
  - name: reserve
    call: {method: FETCH, url: 'http://x.local/${input.id}'}
  - name: pay.now
    call: {method: POST, url: '/payments'}
  - name: ship
    call: {method: POST, url: 'http://x.local/${steps.email.status}', expect: 201}
  - name: email
    call: {method: POST, url: 'http://x.local/${params.x}'}
    compensate: {method: DELETE, url: 'http://x.local/${steps.email.body}'}
`
	want := []string{
		`line 1, column 7: name: "bad name" is not a name`,
		`line 3, column 12: options.timeout: want a duration`,
		`line 4, column 17: options.worker_group: "a b" is not a worker group`,
		`line 7, column 20: steps[0].call.method: unknown method "FETCH"`,
		`line 8, column 11: steps[1].name: "pay.now" is not a step name`,
		`line 9, column 31: steps[1].call.url: "/payments": want an absolute`,
		`line 11, column 47: steps[2].call.url: ${steps.email.status}: step "email" runs after "ship"`,
		`line 11, column 71: steps[2].call.expect: unknown field`,
		`line 13, column 47: steps[3].call.url: ${params.x}: unknown reference`,
		`line 14, column 55: steps[3].compensate.url: ${steps.email.body}: a compensation reads its own step's answer`,
	}
	_, err := saga.Parse([]byte(text))
	var de *saga.DefinitionError
	if !errors.As(err, &de) {
		t.Fatalf("got %v; want a *DefinitionError", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("no %q in the error", w)
		}
	}
	if len(de.Problems) != len(want) {
		t.Errorf("%d problems reported; want %d: %v", len(de.Problems), len(want), err)
	}
	for i, p := range de.Problems {
		if p.Line == 0 || p.Column == 0 {
			t.Errorf("problem without its place: %+v", p)
		}
		if i > 0 && p.Line < de.Problems[i-1].Line {
			t.Errorf("problems out of the file's order: %v", err)
		}
	}
}
