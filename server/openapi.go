package server

import (
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// OpenAPI returns the API's OpenAPI 3 document, built from the route table
// and the Go types of the bodies, so that it cannot drift from the handlers;
// a test checks real responses against it.
func OpenAPI(svc api.Service) map[string]any {
	h := &handler{svc: svc}
	g := &schemas{defs: map[string]any{}}
	paths := map[string]map[string]any{}
	for _, r := range h.routes() {
		op := map[string]any{"summary": r.Summary, "operationId": operationID(r)}
		var params []any
		for _, m := range pathParam.FindAllStringSubmatch(r.Path, -1) {
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
		}
		for _, q := range r.query {
			params = append(params, map[string]any{"name": q, "in": "query", "schema": map[string]any{"type": "string"}})
		}
		if params != nil {
			op["parameters"] = params
		}
		if r.req != nil {
			op["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": g.of(r.req)}}}
		}
		responses := map[string]any{"default": jsonBody("an error", g.of(reflect.TypeFor[Error]()))}
		responses["200"] = jsonBody("success", g.of(r.resp))
		if r.noContent {
			responses["204"] = map[string]any{"description": "nothing yet (the long poll's wait passed)"}
		}
		op["responses"] = responses
		if paths[r.Path] == nil {
			paths[r.Path] = map[string]any{}
		}
		paths[r.Path][strings.ToLower(r.Method)] = op
	}
	return map[string]any{
		"openapi": "3.0.3",
		"info": map[string]any{"title": "Strand API", "version": "v1",
			"description": "Durable workflows: start and manage runs, and the task polling that remote workers use. Durations are integers in nanoseconds; bytes are base64."},
		"paths":      paths,
		"components": map[string]any{"schemas": g.defs},
	}
}

var pathParam = regexp.MustCompile(`\{([a-z_]+)\}`)

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

// schemas turns Go types into JSON schemas, structs as named components.
type schemas struct{ defs map[string]any }

var (
	timeType     = reflect.TypeFor[time.Time]()
	durationType = reflect.TypeFor[time.Duration]()
	statusType   = reflect.TypeFor[store.RunStatus]()
)

func (g *schemas) of(t reflect.Type) map[string]any {
	switch {
	case t == statusType:
		return map[string]any{"type": "string", "enum": store.RunStatusNames()}
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t == durationType:
		return map[string]any{"type": "integer", "format": "int64", "description": "nanoseconds"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.of(t.Elem())
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "format": "byte"}
		}
		return map[string]any{"type": "array", "items": g.of(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.of(t.Elem())}
	case reflect.Struct:
		name := t.Name()
		if name == "" {
			return g.object(t)
		}
		if pkg := t.PkgPath(); strings.HasSuffix(pkg, "/store") {
			name = "Store" + name
		}
		ref := map[string]any{"$ref": "#/components/schemas/" + name}
		if _, ok := g.defs[name]; !ok {
			g.defs[name] = map[string]any{} // breaks cycles (Failure.Cause)
			g.defs[name] = g.object(t)
		}
		return ref
	}
	return map[string]any{}
}

// object is a struct's schema: its JSON fields, embedded structs inlined.
func (g *schemas) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for f := range t.Fields() {
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
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
			props[name] = g.of(f.Type)
		}
	}
	walk(t)
	return map[string]any{"type": "object", "properties": props, "additionalProperties": false}
}

// serveOpenAPI serves the document.
func serveOpenAPI(doc map[string]any) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, doc) }
}
