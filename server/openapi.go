package server

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/strandhq/strand/access"
	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/dag"
	"github.com/strandhq/strand/saga"
	"github.com/strandhq/strand/store"
)

// The OpenAPI document says what the server enforces, so that a client (or
// a fuzzer) that follows it is never refused for the shape of a request,
// and one that breaks it always is. It reads these struct tags on the
// bodies' Go types:
//
//	required:"true"   the field must be present, non-null and non-empty
//	                  (the engine refuses it otherwise)
//	id:"true"         an id: at most store.MaxIDChars characters, no NUL
//	minimum:"N"       a number's lowest value
//	maximum:"N"       a number's highest value
//	max:"N"           a limit in bytes for a string or []byte, in entries
//	                  for a map or a slice
//	pattern:"RE"      a string's regular expression
//	enum:"A,B"        a string's only values ("" among them when it starts
//	                  with a comma)
//	keys:"nonempty"   a map's keys are not empty
//	notkeys:"A,B"     keys a map may not have (the server sets them)
//	items:"nonempty"  a list's strings are not empty (nor null, which is
//	                  taken as empty)
//	itempattern:"RE"  a list's strings' regular expression (not null)
//	unique:"true"     a list holds no value twice
//	zero:"default"    with minimum: 0 is taken too (it means the default)
//	text:"true"       a string (or a map's keys and values) without NUL
//
// Rules between a body's fields (a password unless a service account, a
// signal batch's signal name) are JSON Schema in bodyRules, by the body's
// type. The document is OpenAPI 3.1, whose schemas are JSON Schema 2020-12
// (map keys' rules need its propertyNames); docs/operations.md lists the
// rules JSON Schema cannot state.
//
// An integer's range is its Go type's unless a tag narrows it; a
// time.Duration is an integer of nanoseconds, never negative. In a request
// body a field that is not required may be null, which is the same as
// leaving it out; in an answer a field is always present unless its JSON
// tag omits it when empty, and it is never null.

// OpenAPI returns the API's OpenAPI 3.1 document, built from the route table
// and the Go types of the bodies, so that it cannot drift from the handlers;
// tests check real responses against it, and Schemathesis runs against it
// in `make test` (scripts/schemathesis.sh).
func OpenAPI(svc api.Service) map[string]any {
	return openAPI(&handler{svc: svc})
}

// openAPI is the document of h's routes (the access routes too when h
// has an access service).
func openAPI(h *handler) map[string]any {
	routes := h.routes()
	g := &schemas{defs: map[string]any{}, out: map[reflect.Type]bool{}}
	for _, r := range routes {
		if r.resp != nil {
			g.markOut(r.resp)
		}
	}
	g.markOut(reflect.TypeFor[Error]())
	ids := map[string]string{}
	for _, r := range routes {
		ids[r.Method+" "+r.Path] = operationID(r)
	}
	paths := map[string]map[string]any{}
	for _, r := range routes {
		if r.internal {
			continue
		}
		need, _ := needOf(r.Method, r.Path)
		op := map[string]any{"summary": r.Summary, "operationId": operationID(r),
			"description": "Needs " + need.String() + " when the server has access control.", "x-strand-needs": need.String()}
		if need.Scope == Public {
			op["security"] = []any{}
		}
		var params []any
		for _, m := range pathParam.FindAllStringSubmatch(r.Path, -1) {
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": pathSchema(m[1])})
		}
		for _, q := range r.query {
			p := map[string]any{"name": q.name, "in": "query", "schema": q.schema}
			if q.desc != "" {
				p["description"] = q.desc
			}
			if q.required() {
				p["required"] = true
			}
			params = append(params, p)
		}
		if params != nil {
			op["parameters"] = params
		}
		if r.req != nil {
			schema := g.of(r.req, in)
			if len(r.fromPath) > 0 {
				schema = g.fromPath(schema, r.fromPath)
			}
			op["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": schema,
				"example": example(r.req, r.fromPath)}}}
		}
		ok := jsonBody("success", g.of(r.resp, out))
		if len(r.links) > 0 {
			links := map[string]any{}
			for _, l := range r.links {
				target, found := ids[l.target]
				if !found {
					panic("server: a link to no route: " + l.target)
				}
				def := map[string]any{"operationId": target, "description": l.desc}
				if len(l.params) > 0 {
					def["parameters"] = l.params
				}
				if len(l.body) > 0 {
					def["requestBody"] = l.body
				}
				links[l.name] = def
			}
			ok["links"] = links
		}
		responses := map[string]any{
			"200":     ok,
			"default": jsonBody("an error: a 4xx is a mistake of the request, a 5xx a fault of the server or its store", g.of(reflect.TypeFor[Error](), out)),
		}
		if r.noContent {
			responses["204"] = map[string]any{"description": "nothing yet (the long poll's wait passed)"}
		}
		op["responses"] = responses
		if paths[r.Path] == nil {
			paths[r.Path] = map[string]any{}
		}
		paths[r.Path][strings.ToLower(r.Method)] = op
	}
	// A method a path does not have is answered 405 with an Allow header.
	for _, item := range paths {
		var allow []string
		for m := range item {
			allow = append(allow, strings.ToUpper(m))
		}
		sort.Strings(allow)
		for _, op := range item {
			op.(map[string]any)["responses"].(map[string]any)["405"] = map[string]any{
				"description": "not a method of this path (" + strings.Join(allow, ", ") + ")",
				"headers":     map[string]any{"Allow": map[string]any{"description": "the path's methods", "schema": map[string]any{"type": "string"}}},
				"content":     map[string]any{"application/json": map[string]any{"schema": g.of(reflect.TypeFor[Error](), out)}},
			}
		}
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": "Strand API", "version": "v1",
			"description": "Durable workflows: start and manage runs, and the task polling that remote workers use. " +
				"Durations in bodies are integers of nanoseconds (never negative); in a query parameter they are Go duration strings (`30s`, `1m30s`). " +
				"Bytes are base64 (standard alphabet, padded). Times are RFC 3339. " +
				"In a request body a field that is not required may be null, which is the same as leaving it out; answers hold null only as a value of a map of bytes (memo). " +
				"Lengths of names and ids are limits in bytes of UTF-8. " +
				"Errors are `{code, message, field}` with a stable code; a 4xx is a mistake of the request, a 5xx a fault of the server or its store. " +
				"The calls between the nodes of a cluster (`/api/v1/peer/{op}`) are not part of this document. " +
				"On a server with access control every call but login carries an API token (`Authorization: Bearer strand_…`) or the console's session cookie " +
				"(then a change also carries the `X-Strand-Console` header); each operation says the role it needs. " +
				"A call without accepted credentials gets 401 unauthenticated, one whose caller lacks the role 403 permission_denied."},
		"paths": paths,
		"components": map[string]any{"schemas": g.defs, "securitySchemes": map[string]any{
			"token":   map[string]any{"type": "http", "scheme": "bearer", "description": "an API token, strand_ID_SECRET (strand login, strand token create)"},
			"session": map[string]any{"type": "apiKey", "in": "cookie", "name": SessionCookie, "description": "the console's session (POST /login with session: true)"},
		}},
	}
	if h.opts.Access != nil && !h.opts.Open {
		// An open server asks for no credentials, and its document says so.
		doc["security"] = []any{map[string]any{"token": []any{}}, map[string]any{"session": []any{}}}
	}
	return doc
}

var pathParam = regexp.MustCompile(`\{([a-z_]+)\}`)

// pathSchema is the schema of a path parameter.
func pathSchema(name string) map[string]any {
	switch name {
	case "namespace":
		return map[string]any{"type": "string", "minLength": 1, "maxLength": store.MaxNamespaceChars, "pattern": noNUL,
			"description": "a namespace's name (default is always there)"}
	case "workflow_id":
		return idSchema()
	case "backfill_id":
		s := idSchema()
		s["description"] = "a DAG backfill's id (its run's workflow id)"
		return s
	case "schedule_id", "batch_id":
		s := idSchema()
		s["maxLength"] = 200
		return s
	case "user":
		return map[string]any{"type": "string", "minLength": 1, "maxLength": 128, "pattern": noNUL,
			"description": "a user's or service account's name"}
	case "message":
		return map[string]any{"type": "string", "minLength": 1, "maxLength": 200, "pattern": noNUL, "description": "a message name"}
	case "task_id":
		s := idSchema()
		s["description"] = "a human task's id (strand-task:…)"
		return s
	case "version":
		return map[string]any{"type": "string", "pattern": `^(latest|[0-9]{1,9}|[0-1][0-9]{9}|20[0-9]{8}|21[0-3][0-9]{7}|214[0-6][0-9]{6}|2147[0-3][0-9]{5}|21474[0-7][0-9]{4}|214748[0-2][0-9]{3}|2147483[0-5][0-9]{2}|21474836[0-3][0-9]|214748364[0-7])$`,
			"description": "a version number (0 to 2147483647; 0 is the latest) or latest"}
	}
	return map[string]any{"type": "string", "minLength": 1, "pattern": noNUL}
}

// noNUL is the pattern of a string without a NUL character, as ids are.
const noNUL = `^[^\x00]*$`

// idSchema is the schema of a workflow or run id.
func idSchema() map[string]any {
	return map[string]any{"type": "string", "minLength": 1, "maxLength": store.MaxIDChars, "pattern": noNUL}
}

// param is a query parameter and its schema.
type param struct {
	name   string
	schema map[string]any
	desc   string
}

// required reports a parameter a request must have: one whose string may
// not be empty.
func (p param) required() bool {
	n, ok := p.schema["minLength"].(int)
	return ok && n > 0
}

func stringParam(name, desc string) param {
	return param{name, map[string]any{"type": "string"}, desc}
}

func idParam(name, desc string) param {
	s := idSchema()
	delete(s, "minLength")
	return param{name, s, desc}
}

// boolQuery is a boolean query parameter: true or false, absent is false.
func boolQuery(name, desc string) param {
	return param{name, map[string]any{"type": "boolean"}, desc}
}

func intQuery(name string, lo, hi int64, desc string) param {
	return param{name, map[string]any{"type": "integer", "format": "int64", "minimum": lo, "maximum": hi}, desc}
}

// durationPattern is what a duration query parameter accepts: a Go
// duration without a sign.
const durationPattern = `^(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`

var durationRE = regexp.MustCompile(durationPattern)

func durationQuery(name, desc string) param {
	return param{name, map[string]any{"type": "string", "pattern": durationPattern}, desc}
}

func bytesQuery(name, desc string) param {
	return param{name, map[string]any{"type": "string", "format": "byte"}, desc}
}

// link is an OpenAPI link from a route's 200 answer to another route.
type link struct {
	name, target, desc string
	params             map[string]any
	body               map[string]any
}

func operationID(r Route) string {
	id := strings.ToLower(r.Method)
	for _, part := range strings.Split(strings.TrimPrefix(r.Path, prefix), "/") {
		part = strings.Trim(part, "{}")
		for _, w := range strings.FieldsFunc(part, func(c rune) bool { return c == '-' || c == '_' }) {
			id += strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return id
}

func jsonBody(desc string, schema map[string]any) map[string]any {
	return map[string]any{"description": desc, "content": map[string]any{"application/json": map[string]any{"schema": schema}}}
}

// direction says whether a schema describes a request or an answer.
type direction int8

const (
	in direction = iota
	out
)

// schemas turns Go types into JSON schemas, structs as named components.
// A struct that appears both in requests and in answers gets two: the
// request's is named with an Input suffix.
type schemas struct {
	defs map[string]any
	out  map[reflect.Type]bool // structs that appear in answers
}

var (
	timeType     = reflect.TypeFor[time.Time]()
	durationType = reflect.TypeFor[time.Duration]()
	statusType   = reflect.TypeFor[store.RunStatus]()
	rawType      = reflect.TypeFor[json.RawMessage]()
	valueType    = reflect.TypeFor[api.Value]()
	payloadType  = reflect.TypeFor[api.Payload]()
)

// base64Pattern is what Go's standard base64 decodes (padded, without line
// breaks).
const base64Pattern = `^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$`

// valueSchema is an api.Value's: any JSON value but an explicit form that
// does not decode ($base64 with other than base64, $document where a value
// goes).
func valueSchema() map[string]any {
	return map[string]any{
		"description": `any JSON value; bytes that are not JSON as {"$base64": "..."}, and a JSON object whose only key is $base64, $json or $document wrapped as {"$json": value}`,
		"not": map[string]any{"anyOf": []any{
			map[string]any{"type": "object", "required": []any{"$base64"}, "maxProperties": 1,
				"properties": map[string]any{"$base64": map[string]any{"not": map[string]any{"type": "string", "pattern": base64Pattern}}}},
			map[string]any{"type": "object", "required": []any{"$document"}, "maxProperties": 1},
		}},
	}
}

// enums are the types whose values are a fixed list.
var enums = map[reflect.Type][]any{
	reflect.TypeFor[api.IDReusePolicy]():     {api.AllowDuplicate, api.AllowDuplicateFailedOnly, api.RejectDuplicate, api.TerminateIfRunning},
	reflect.TypeFor[api.ParentClosePolicy](): {api.ParentCloseTerminate, api.ParentCloseRequestCancel, api.ParentCloseAbandon},
	reflect.TypeFor[api.BatchOperation]():    {api.BatchSignal, api.BatchCancel, api.BatchTerminate, api.BatchReset, api.BatchPause, api.BatchResume},
	reflect.TypeFor[api.ResetPoint]():        {"", api.ResetLastWorkflowTask, api.ResetFirstFailedStep, api.ResetBeforeEvent},
	reflect.TypeFor[api.OverlapPolicy]():     {"", api.OverlapSkip, api.OverlapBufferOne, api.OverlapBufferAll, api.OverlapCancelOther, api.OverlapTerminateOther, api.OverlapAllowAll},
	reflect.TypeFor[api.CatchupPolicy]():     {"", api.CatchupLatest, api.CatchupNone, api.CatchupAll},
	reflect.TypeFor[api.CommandType](): {api.CommandScheduleStep, api.CommandCancelStep, api.CommandStartTimer, api.CommandCancelTimer,
		api.CommandStartChild, api.CommandSignalExternal, api.CommandCancelExternal, api.CommandSideEffect,
		api.CommandUpsertAttributes, api.CommandUpsertMemo, api.CommandComplete, api.CommandFail, api.CommandCancel, api.CommandContinueAsNew},
	reflect.TypeFor[dag.FailureStrategy](): {"", dag.FailureEnd, dag.FailureFinishRunning, dag.FailureContinue},
	reflect.TypeFor[DAGAction]():           {dag.ActionPause, dag.ActionResume, dag.ActionStop},
	reflect.TypeFor[SagaAction]():          {saga.ActionRetry, saga.ActionDone, saga.ActionSkip},
	reflect.TypeFor[SagaBatchAction]():     {saga.ActionRetry, saga.ActionDone, saga.ActionSkip, "terminate"},
	reflect.TypeFor[SagaFilterState]():     sagaFilterStates,
	reflect.TypeFor[access.Role]():         {access.Reader, access.Writer, access.Operator, access.Admin, access.Worker},
	reflect.TypeFor[access.Kind]():         {access.KindUser, access.KindService, access.KindAnonymous, access.KindNode},
	reflect.TypeFor[saga.State]():          {saga.StateStarted, saga.StateInProgress, saga.StateCompleted, saga.StateFailed, saga.StateCompensating, saga.StateCompensated, saga.StateCompensationFailed, saga.StateDisabled, saga.StateTerminated},
}

// bodyRules are rules between a request body's fields that JSON Schema
// states (each an entry of the body's allOf), by the body's type.
var bodyRules = map[reflect.Type][]any{
	// A user (the default kind) logs in with a password of at least 8
	// characters (and at most 72 bytes);
	// a service account calls with tokens and has none.
	reflect.TypeFor[access.NewUser](): {map[string]any{"anyOf": []any{
		map[string]any{"required": []any{"password"}, "properties": map[string]any{
			"kind":     map[string]any{"enum": []any{"", access.KindUser, nil}},
			"password": map[string]any{"type": "string", "minLength": access.MinPassword}}},
		map[string]any{"required": []any{"kind"}, "properties": map[string]any{
			"kind":     map[string]any{"const": access.KindService},
			"password": map[string]any{"enum": []any{"", nil}}}},
	}}},
	// A new password, like a user's, is at least 8 characters.
	reflect.TypeFor[ChangePasswordRequest](): {map[string]any{"properties": map[string]any{
		"new_password": map[string]any{"type": "string", "minLength": access.MinPassword}}}},
	// A signal batch names its signal; a reset before an event names the
	// event.
	reflect.TypeFor[api.StartBatchRequest](): {
		map[string]any{"anyOf": []any{
			map[string]any{"properties": map[string]any{"operation": map[string]any{"not": map[string]any{"const": api.BatchSignal}}}},
			map[string]any{"required": []any{"signal_name"}, "properties": map[string]any{"signal_name": map[string]any{"type": "string", "minLength": 1}}},
		}},
		beforeEvent("reset_point", "reset_event_id"),
	},
	reflect.TypeFor[api.ResetRequest](): {beforeEvent("point", "event_id")},
	// A DAG backfill names a range (from and to) or a list of dates, not
	// both.
	reflect.TypeFor[DAGBackfill](): {map[string]any{"anyOf": []any{
		map[string]any{"required": []any{"from", "to"}, "properties": map[string]any{
			"from":  map[string]any{"type": "string", "minLength": 1},
			"to":    map[string]any{"type": "string", "minLength": 1},
			"dates": map[string]any{"not": map[string]any{"type": "array", "minItems": 1}}}},
		map[string]any{"required": []any{"dates"}, "properties": map[string]any{
			"dates": map[string]any{"type": "array", "minItems": 1},
			"from":  map[string]any{"enum": []any{"", nil}},
			"to":    map[string]any{"enum": []any{"", nil}}}},
	}}},
	// A decision (retry, done, skip) is for the sagas in
	// compensation_failed, the only ones that wait for one; a terminate
	// selects its sagas by name or by a state the kernel lists them by
	// (terminated alone is a status, not a saga's attribute).
	reflect.TypeFor[SagaBatch](): {map[string]any{"anyOf": []any{
		map[string]any{"properties": map[string]any{
			"action": map[string]any{"enum": []any{saga.ActionRetry, saga.ActionDone, saga.ActionSkip}},
			"state":  map[string]any{"enum": []any{"", saga.StateCompensationFailed, nil}}}},
		map[string]any{"required": []any{"name"}, "properties": map[string]any{
			"action": map[string]any{"const": "terminate"},
			"name":   map[string]any{"type": "string", "minLength": 1}}},
		map[string]any{"required": []any{"state"}, "properties": map[string]any{
			"action": map[string]any{"const": "terminate"},
			"state":  map[string]any{"type": "string", "minLength": 1, "not": map[string]any{"const": saga.StateTerminated}}}},
	}}},
}

// beforeEvent is the rule that a reset before an event (point) names the
// event (id): 1 or more.
func beforeEvent(point, id string) map[string]any {
	return map[string]any{"anyOf": []any{
		map[string]any{"properties": map[string]any{point: map[string]any{"not": map[string]any{"const": api.ResetBeforeEvent}}}},
		map[string]any{"required": []any{id}, "properties": map[string]any{id: map[string]any{"type": "integer", "minimum": 1}}},
	}}
}

// markOut records the structs reachable from an answer's type.
func (g *schemas) markOut(t reflect.Type) {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map:
		g.markOut(t.Elem())
	case reflect.Struct:
		if g.out[t] || t == timeType {
			return
		}
		g.out[t] = true
		for f := range t.Fields() {
			if f.IsExported() {
				g.markOut(f.Type)
			}
		}
	}
}

func (g *schemas) of(t reflect.Type, d direction) map[string]any {
	if vals, ok := enums[t]; ok {
		s := map[string]any{"enum": vals}
		if t.Kind() == reflect.String {
			s["type"] = "string"
		} else {
			s["type"] = "integer"
		}
		return s
	}
	switch t {
	case statusType:
		return map[string]any{"type": "string", "enum": store.RunStatusNames()}
	case timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case durationType:
		return map[string]any{"type": "integer", "format": "int64", "minimum": 0, "maximum": int64(math.MaxInt64), "description": "nanoseconds"}
	case rawType:
		return map[string]any{}
	case valueType:
		return valueSchema()
	case payloadType:
		return map[string]any{"description": `the payload's JSON value (as a Value's), or {"$document": {"id": ..., "size": ...}} for a payload stored as a document of the run`}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.of(t.Elem(), d)
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := t.Bits()
		s := map[string]any{"type": "integer", "minimum": -int64(1) << (bits - 1), "maximum": int64(1)<<(bits-1) - 1}
		if bits == 64 {
			s["minimum"], s["maximum"] = int64(math.MinInt64), int64(math.MaxInt64)
			s["format"] = "int64"
		} else if bits == 32 {
			s["format"] = "int32"
		}
		return s
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer", "minimum": 0}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && d == in {
			// encoding/json also takes an array of byte values (null is 0).
			return map[string]any{"anyOf": []any{
				map[string]any{"type": "string", "format": "byte"},
				map[string]any{"type": "array", "items": map[string]any{"type": []any{"integer", "null"}, "minimum": 0, "maximum": 255}},
			}}
		}
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "format": "byte"}
		}
		return map[string]any{"type": "array", "items": g.element(t.Elem(), d)}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.element(t.Elem(), d)}
	case reflect.Struct:
		name := t.Name()
		if name == "" {
			return g.object(t, d)
		}
		if pkg := t.PkgPath(); strings.HasSuffix(pkg, "/store") {
			name = "Store" + name
		}
		if d == in && g.out[t] {
			name += "Input"
		}
		ref := map[string]any{"$ref": "#/components/schemas/" + name}
		if _, ok := g.defs[name]; !ok {
			g.defs[name] = map[string]any{} // breaks cycles (Failure.Cause)
			g.defs[name] = g.object(t, d)
		}
		return ref
	}
	return map[string]any{}
}

// element is the schema of a slice's or a map's element. In a request a
// null string element is an empty string (and a null map or slice an
// empty one); other null elements are refused.
func (g *schemas) element(t reflect.Type, d direction) map[string]any {
	s := g.of(t, d)
	if t == valueType {
		return s // admits null already
	}
	if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
		return orNull(s) // a null value in a map of bytes is kept, and shown
	}
	if d == in && t != statusType && enums[t] == nil {
		switch t.Kind() {
		case reflect.String, reflect.Slice, reflect.Map:
			return orNull(s)
		}
	}
	return s
}

// object is a struct's schema: its JSON fields, embedded structs inlined.
func (g *schemas) object(t reflect.Type, d direction) map[string]any {
	props := map[string]any{}
	var required []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for f := range t.Fields() {
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if f.Anonymous && name == "" {
				walk(f.Type)
				continue
			}
			if name == "" {
				name = f.Name
			}
			s, req := g.field(f, d, opts)
			props[name] = s
			if req {
				required = append(required, name)
			}
		}
	}
	walk(t)
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if rules := bodyRules[t]; d == in && rules != nil {
		s["allOf"] = rules
	}
	if len(required) > 0 {
		sort.Strings(required)
		s["required"] = required
	}
	return s
}

// field is a struct field's schema and whether it is required: in a
// request when tagged so, in an answer unless its JSON tag omits it.
func (g *schemas) field(f reflect.StructField, d direction, jsonOpts string) (map[string]any, bool) {
	s := g.of(f.Type, d)
	var required bool
	if d == out {
		required = !strings.Contains(jsonOpts, "omitempty") && !strings.Contains(jsonOpts, "omitzero")
	} else {
		required = f.Tag.Get("required") == "true"
	}
	constraints := map[string]any{}
	ft := f.Type // the field's type, or the type a pointer field points to
	if ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	kind := ft.Kind()
	isBytes := kind == reflect.Slice && ft.Elem().Kind() == reflect.Uint8 && ft != valueType
	if f.Tag.Get("id") == "true" {
		constraints["maxLength"], constraints["pattern"] = store.MaxIDChars, noNUL
	}
	if d == in && f.Tag.Get("required") == "true" {
		switch {
		case isBytes:
			constraints["minLength"], constraints["minItems"] = 1, 1
		case kind == reflect.String:
			constraints["minLength"] = 1
		case kind == reflect.Slice:
			constraints["minItems"] = 1
		case kind == reflect.Map:
			constraints["minProperties"] = 1
		}
	}
	if v := f.Tag.Get("max"); v != "" {
		n := mustInt(f, "max", v)
		switch {
		case isBytes:
			constraints["maxLength"] = 4 * ((n + 2) / 3) // base64 of n bytes
			if d == in {
				constraints["maxItems"] = n
			}
		case kind == reflect.String:
			constraints["maxLength"] = n
		case kind == reflect.Slice:
			constraints["maxItems"] = n
		case kind == reflect.Map:
			constraints["maxProperties"] = n
		}
	}
	for _, tag := range []string{"minimum", "maximum"} {
		if v := f.Tag.Get(tag); v != "" {
			constraints[tag] = mustInt(f, tag, v)
		}
	}
	if v := f.Tag.Get("pattern"); v != "" {
		constraints["pattern"] = v // ECMA-262, as JSON Schema has it: Go's regexp lacks lookahead
	}
	if v, ok := f.Tag.Lookup("enum"); ok {
		var vals []any
		for _, val := range strings.Split(v, ",") {
			vals = append(vals, val)
		}
		constraints["enum"] = vals
	}
	if v := f.Tag.Get("maxvalue"); v != "" {
		n := mustInt(f, "maxvalue", v)
		key := "items"
		if kind == reflect.Map {
			key = "additionalProperties"
		}
		if elem, ok := s[key].(map[string]any); ok {
			elem = clone(elem)
			if ft.Elem().Kind() == reflect.String {
				elem["maxLength"] = n
			} else if ft.Elem().Kind() == reflect.Slice && ft.Elem().Elem().Kind() == reflect.Uint8 && ft.Elem() != valueType {
				elem["maxLength"] = 4 * ((n + 2) / 3)
			}
			constraints[key] = elem
		}
	}
	if kind == reflect.Slice && ft.Elem().Kind() == reflect.String && (f.Tag.Get("items") == "nonempty" || f.Tag.Get("itempattern") != "") {
		// A null element would be taken as "", which these refuse.
		elem, _ := constraints["items"].(map[string]any)
		if elem == nil {
			elem = clone(s["items"].(map[string]any))
		}
		elem["type"] = "string"
		if f.Tag.Get("items") == "nonempty" {
			elem["minLength"] = 1
		}
		if v := f.Tag.Get("itempattern"); v != "" {
			elem["pattern"] = v
		}
		constraints["items"] = elem
	}
	if f.Tag.Get("unique") == "true" {
		constraints["uniqueItems"] = true
	}
	if f.Tag.Get("keys") == "nonempty" {
		constraints["propertyNames"] = map[string]any{"minLength": 1}
	}
	if v := f.Tag.Get("maxkey"); v != "" {
		n := mustInt(f, "maxkey", v)
		names, _ := constraints["propertyNames"].(map[string]any)
		if names == nil {
			names = map[string]any{}
		}
		names["maxLength"] = n
		constraints["propertyNames"] = names
		constraints["description"] = fmt.Sprintf("keys of at most %d characters", n)
	}
	if v := f.Tag.Get("notkeys"); v != "" {
		names, _ := constraints["propertyNames"].(map[string]any)
		if names == nil {
			names = map[string]any{}
		}
		var keys []any
		for _, k := range strings.Split(v, ",") {
			keys = append(keys, k)
		}
		names["not"] = map[string]any{"enum": keys}
		constraints["propertyNames"] = names
	}
	if f.Tag.Get("text") == "true" {
		// Kept as text by the stores: no NUL, in the string, in a list's
		// strings or in a map's keys and values.
		switch kind {
		case reflect.String:
			if _, ok := constraints["pattern"]; !ok {
				constraints["pattern"] = noNUL
			}
		case reflect.Slice:
			if ft.Elem().Kind() == reflect.String {
				elem, _ := constraints["items"].(map[string]any)
				if elem == nil {
					elem, _ = s["items"].(map[string]any)
					elem = clone(elem)
				}
				if _, ok := elem["pattern"]; !ok {
					elem["pattern"] = noNUL
				}
				constraints["items"] = elem
			}
		case reflect.Map:
			names, _ := constraints["propertyNames"].(map[string]any)
			if names == nil {
				names = map[string]any{}
			}
			names["pattern"] = noNUL
			constraints["propertyNames"] = names
			elem, _ := constraints["additionalProperties"].(map[string]any)
			if elem == nil {
				elem, _ = s["additionalProperties"].(map[string]any)
				elem = clone(elem)
			}
			elem["pattern"] = noNUL
			constraints["additionalProperties"] = elem
		}
	}
	if _, isRef := s["$ref"]; isRef && len(constraints) > 0 {
		s = map[string]any{"allOf": []any{s}}
	} else if !isRef {
		s = clone(s)
	}
	for k, v := range constraints {
		s[k] = v
	}
	if _, ok := constraints["minimum"]; ok && f.Tag.Get("zero") == "default" {
		s = map[string]any{"anyOf": []any{map[string]any{"type": "integer", "enum": []any{0}}, s}}
	}
	if d == in && !required && f.Type != statusType {
		s = orNull(s)
	}
	return s, required
}

// orNull is a schema that also admits null: "null" among the types of a
// schema of one type (and null among its values when it lists them), or
// else any of the schema and null.
func orNull(s map[string]any) map[string]any {
	t, typed := s["type"].(string)
	_, isRef := s["$ref"]
	if !typed || isRef {
		return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
	}
	s = clone(s)
	s["type"] = []any{t, "null"}
	if e, ok := s["enum"].([]any); ok {
		s["enum"] = append(slices.Clone(e), nil)
	}
	return s
}

func mustInt(f reflect.StructField, tag, v string) int64 {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("server: field %s: tag %s:%q is not an integer", f.Name, tag, v))
	}
	return n
}

func clone(s map[string]any) map[string]any {
	c := make(map[string]any, len(s))
	for k, v := range s {
		c[k] = v
	}
	return c
}

// fromPath returns a request schema in which the fields the handler takes
// from the path (dotted JSON names, such as start.workflow_id) are no
// longer required: the components along the way are copied inline.
func (g *schemas) fromPath(s map[string]any, fields []string) map[string]any {
	s = g.resolve(s)
	for _, f := range fields {
		name, rest, nested := strings.Cut(f, ".")
		props := clone(s["properties"].(map[string]any))
		s["properties"] = props
		if nested {
			props[name] = g.fromPath(props[name].(map[string]any), []string{rest})
			continue
		}
		// Ignored, but still within its length limit: the body is checked
		// against the limits before the path fills the field.
		field := map[string]any{"type": []any{"string", "null"}, "description": "ignored: the path names it"}
		if own, ok := props[name].(map[string]any); ok {
			if n, ok := g.resolve(own)["maxLength"]; ok {
				field["maxLength"] = n
			}
		}
		props[name] = field
		if req, ok := s["required"].([]string); ok {
			var keep []string
			for _, r := range req {
				if r != name {
					keep = append(keep, r)
				}
			}
			if keep == nil {
				delete(s, "required")
			} else {
				s["required"] = keep
			}
		}
	}
	return s
}

// resolve returns a copy of a schema with a component reference (or an
// allOf of one) replaced by the component.
func (g *schemas) resolve(s map[string]any) map[string]any {
	if all, ok := s["allOf"].([]any); ok && len(all) == 1 && isRef(all[0]) {
		inner := g.resolve(all[0].(map[string]any))
		for k, v := range s {
			if k != "allOf" {
				inner[k] = v
			}
		}
		return inner
	}
	if ref, ok := s["$ref"].(string); ok {
		return clone(g.defs[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any))
	}
	return clone(s)
}

// isRef reports whether a schema is a component reference.
func isRef(s any) bool {
	m, ok := s.(map[string]any)
	_, ref := m["$ref"]
	return ok && ref
}

// example is a request body with its required fields and those with an
// example tag set (and those the path fills left out), for the document's
// examples: a field's example tag, or a placeholder.
func example(t reflect.Type, fromPath []string) map[string]any {
	out := map[string]any{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for f := range t.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && name == "" {
				walk(f.Type)
				continue
			}
			if !f.IsExported() || (f.Tag.Get("required") != "true" && f.Tag.Get("example") == "") || slices.Contains(fromPath, name) {
				continue
			}
			var skip []string
			for _, p := range fromPath {
				if rest, ok := strings.CutPrefix(p, name+"."); ok {
					skip = append(skip, rest)
				}
			}
			switch ft := f.Type; {
			case f.Tag.Get("example") != "":
				// A value the handler takes, where a placeholder would not do
				// (a cron expression, a time).
				if ft.Kind() == reflect.Slice {
					out[name] = []string{f.Tag.Get("example")}
				} else {
					out[name] = f.Tag.Get("example")
				}
			case f.Tag.Get("enum") != "":
				// the first value the list allows (not "")
				for _, v := range strings.Split(f.Tag.Get("enum"), ",") {
					if v != "" {
						out[name] = v
						break
					}
				}
			case enums[ft] != nil:
				for _, v := range enums[ft] {
					if v != "" {
						out[name] = v
						break
					}
				}
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Uint8:
				out[name] = []byte("example")
			case ft.Kind() == reflect.String:
				out[name] = "example"
			case ft.Kind() == reflect.Struct:
				out[name] = example(ft, skip)
			case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct:
				out[name] = example(ft.Elem(), skip)
			}
		}
	}
	walk(t)
	return out
}

// serveOpenAPI serves the document.
func serveOpenAPI(doc map[string]any) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, doc) }
}
