package server

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strandhq/strand/access"
	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// AuditLog records the changes made through the API (who, when, from
// where, what, on which namespace and run, and how it ended) in the
// store's audit log, in batches, and purges the entries older than its
// retention. Start it before serving and Close it after.
//
// Refused calls (401, 403) are folded: the first refusal of a source (one
// remote address, one caller, one route, one status) is written at once,
// the ones like it within RefusalWindow after it are counted, and one
// entry with their count is written when the window closes. A flood of
// refusals writes at most two entries per source and window, and sources
// past maxRefusalSources share one.
type AuditLog struct {
	st        store.MetadataStore
	log       *slog.Logger
	retention time.Duration
	window    time.Duration
	in        chan store.AuditEntry
	stop      context.CancelFunc
	done      chan struct{}
	// dropped counts the entries a full queue made record give up on.
	dropped atomic.Int64

	mu sync.Mutex
	// refusals are the open windows of refused calls, by source.
	refusals map[refusalSource]*refusalWindow
	// overflow counts the refusals of sources past maxRefusalSources.
	overflow refusalWindow
}

// AuditOptions configure an AuditLog.
type AuditOptions struct {
	// Retention is how long entries are kept (default 90 days).
	Retention time.Duration
	// RefusalWindow is how long the refusals like one just recorded are
	// counted rather than written (default 1 minute).
	RefusalWindow time.Duration
	Logger        *slog.Logger
}

// maxRefusalSources bounds the sources whose refusals are counted apart in
// one window; the refusals of more are counted together.
const maxRefusalSources = 256

// refusalSource is what makes refusals alike: the same address (without
// its port), caller, route and status.
type refusalSource struct {
	remote, actor, action string
	status                int32
}

// refusalWindow counts the refusals that came after the first of a source.
type refusalWindow struct {
	opened time.Time
	// like is the first refusal, as it was written.
	like store.AuditEntry
	// count is the refusals since, not written; first and last their times.
	count       int
	first, last time.Time
	// mixed: they named other namespaces, targets or runs than like.
	mixedNamespace, mixedTarget bool
}

// auditBuffer bounds the entries waiting to be written; a request that
// finds it full waits for room while it lives.
const auditBuffer = 4096

// NewAuditLog returns the audit log of st.
func NewAuditLog(st store.MetadataStore, opts AuditOptions) *AuditLog {
	if opts.Retention <= 0 {
		opts.Retention = 90 * 24 * time.Hour
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.RefusalWindow <= 0 {
		opts.RefusalWindow = time.Minute
	}
	return &AuditLog{st: st, log: opts.Logger, retention: opts.Retention, window: opts.RefusalWindow,
		in: make(chan store.AuditEntry, auditBuffer), done: make(chan struct{}), refusals: map[refusalSource]*refusalWindow{}}
}

// Start runs the writer and the purge until Close.
func (a *AuditLog) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	a.stop = cancel
	go a.run(ctx)
}

// Close writes what is buffered and stops.
func (a *AuditLog) Close() {
	if a.stop == nil {
		return
	}
	a.stop()
	<-a.done
}

// record queues an entry, made storable first: a request may name what it
// acts on with bytes no store keeps (a NUL, bad UTF-8) or at any length,
// and one entry the store refused would lose the batch it is written in.
func (a *AuditLog) record(ctx context.Context, e store.AuditEntry) {
	e.Namespace = storable(e.Namespace, 256)
	e.Actor = storable(e.Actor, 256)
	e.Remote = storable(e.Remote, 256)
	e.Action = storable(e.Action, 512)
	e.Target = storable(e.Target, 1000)
	e.RunID = storable(e.RunID, 64)
	if refusal(e.Status) && !a.firstRefusal(e) {
		return
	}
	// Queued at once while there is room, whether or not the caller is
	// still there (a select on both would pick at random when it has
	// left); a full queue is waited on while the request lives, and is
	// the only reason an entry is ever dropped.
	select {
	case a.in <- e:
		return
	default:
	}
	select {
	case a.in <- e:
	case <-ctx.Done():
		a.dropped.Add(1)
		a.log.Warn("audit entry dropped: the request ended while the audit log was full", "action", e.Action, "actor", e.Actor)
	}
}

// Dropped is the metric of the entries dropped because the audit log's
// queue was full when their request ended
// (strand_audit_entries_dropped_total): the server registers it.
func (a *AuditLog) Dropped() prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "strand_audit_entries_dropped_total",
		Help: "Audit entries dropped because the audit log's queue was full when their request ended."},
		func() float64 { return float64(a.dropped.Load()) })
}

// refusal reports whether a status is a refused call's.
func refusal(status int32) bool {
	return status == http.StatusUnauthorized || status == http.StatusForbidden
}

// firstRefusal reports whether a refused call's entry is to be written:
// the first of its source in a window is; the others are counted.
func (a *AuditLog) firstRefusal(e store.AuditEntry) bool {
	src := refusalSource{remote: remoteHost(e.Remote), actor: e.Actor, action: e.Action, status: e.Status}
	a.mu.Lock()
	defer a.mu.Unlock()
	w := a.refusals[src]
	if w == nil && len(a.refusals) < maxRefusalSources {
		a.refusals[src] = &refusalWindow{opened: e.Time, like: e}
		return true
	}
	if w == nil {
		w = &a.overflow
	}
	if w.count == 0 {
		w.first = e.Time
	}
	w.count++
	w.last = e.Time
	w.mixedNamespace = w.mixedNamespace || e.Namespace != w.like.Namespace
	w.mixedTarget = w.mixedTarget || e.Target != w.like.Target || e.RunID != w.like.RunID
	return false
}

// closeWindows returns the entries of the refusals counted in the windows
// that closed by now (every window, if all), and forgets those windows.
func (a *AuditLog) closeWindows(now time.Time, all bool) []store.AuditEntry {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []store.AuditEntry
	for src, w := range a.refusals {
		if !all && now.Sub(w.opened) < a.window {
			continue
		}
		if w.count > 0 {
			out = append(out, w.entry())
		}
		delete(a.refusals, src)
	}
	if a.overflow.count > 0 && (all || now.Sub(a.overflow.first) >= a.window) {
		a.overflow.like = store.AuditEntry{Actor: "(many callers)", Action: "refused calls of more sources than are counted apart", Status: http.StatusForbidden}
		a.overflow.mixedNamespace, a.overflow.mixedTarget = false, false
		out = append(out, a.overflow.entry())
		a.overflow = refusalWindow{}
	}
	return out
}

// entry is the entry of the refusals a window counted: the first one's,
// with their count and times (and without what they did not share).
func (w *refusalWindow) entry() store.AuditEntry {
	e := w.like
	e.ID, e.Time = entryID(w.last), w.last
	if w.mixedNamespace {
		e.Namespace = ""
	}
	if w.mixedTarget {
		e.Target, e.RunID = "", ""
	}
	detail := map[string]any{"count": w.count, "first": w.first, "last": w.last}
	var like map[string]json.RawMessage
	if json.Unmarshal(e.Detail, &like) == nil && like["reason"] != nil {
		detail["reason"] = like["reason"]
	}
	e.Detail, _ = json.Marshal(detail)
	return e
}

// remoteHost is a remote address without its port: what refusals are
// folded by and failed logins counted by.
func remoteHost(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// run writes entries in batches (as they come, up to 500 at a time),
// writes the counts of refusals as their windows close, and purges once an
// hour.
func (a *AuditLog) run(ctx context.Context) {
	defer close(a.done)
	purge := time.NewTicker(time.Hour)
	defer purge.Stop()
	windows := time.NewTicker(min(max(a.window/4, 10*time.Millisecond), 5*time.Second))
	defer windows.Stop()
	a.purge(ctx)
	var batch []store.AuditEntry
	write := func() {
		if len(batch) == 0 {
			return
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		for attempt := 0; ; attempt++ {
			err := a.st.AppendAudit(wctx, batch...)
			if err == nil {
				break
			}
			if errors.Is(err, store.ErrInvalidArgument) {
				// One entry the store will never take: the others go
				// one by one, so that only it is lost.
				a.appendEach(wctx, batch)
				break
			}
			if wctx.Err() != nil || attempt == 5 {
				a.log.Error("audit entries lost: the store did not take them", "entries", len(batch), "error", err)
				break
			}
			time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
		}
		batch = batch[:0]
	}
	// take moves the entries waiting into batch, up to limit in all.
	take := func(limit int) {
		for len(batch) < limit {
			select {
			case e := <-a.in:
				batch = append(batch, e)
			default:
				return
			}
		}
	}
	for {
		select {
		case e := <-a.in:
			batch = append(batch, e)
			take(500)
			write()
		case now := <-windows.C:
			if batch = append(batch, a.closeWindows(now, false)...); len(batch) > 0 {
				take(500)
				write()
			}
		case <-purge.C:
			a.purge(ctx)
		case <-ctx.Done():
			take(auditBuffer + 1)
			batch = append(batch, a.closeWindows(time.Now(), true)...)
			write()
			return
		}
	}
}

// appendEach writes entries one at a time, logging those the store refuses.
func (a *AuditLog) appendEach(ctx context.Context, entries []store.AuditEntry) {
	for _, e := range entries {
		if err := a.st.AppendAudit(ctx, e); err != nil {
			a.log.Error("audit entry lost: the store did not take it", "action", e.Action, "actor", e.Actor, "error", err)
		}
	}
}

// storable is s as an audit entry can keep it: valid UTF-8 without NUL
// (each replaced by U+FFFD), cut to max characters.
func storable(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	if utf8.RuneCountInString(s) > max {
		s = string([]rune(s)[:max])
	}
	return s
}

// purge deletes the entries past retention, 1,000 at a time.
func (a *AuditLog) purge(ctx context.Context) {
	before := time.Now().Add(-a.retention)
	for ctx.Err() == nil {
		n, err := a.st.PurgeAudit(ctx, before, 1000)
		if err != nil {
			if ctx.Err() == nil {
				a.log.Warn("audit purge", "error", err)
			}
			return
		}
		if n < 1000 {
			return
		}
	}
}

// unaudited are the routes that change nothing a person asked for: reads
// sent as POSTs, and the workers' and nodes' task traffic.
var unaudited = map[string]bool{
	"POST /namespaces/{namespace}/workflow-search":                 true,
	"POST /namespaces/{namespace}/workflow-count":                  true,
	"POST /namespaces/{namespace}/workflow-status-counts":          true,
	"POST /namespaces/{namespace}/workflows/{workflow_id}/queries": true,
	"POST /namespaces/{namespace}/workflow-tasks/poll":             true,
	"POST /namespaces/{namespace}/step-tasks/poll":                 true,
	"POST /workflow-tasks/complete":                                true,
	"POST /workflow-tasks/fail":                                    true,
	"POST /queries/answer":                                         true,
	"POST /step-tasks/complete":                                    true,
	"POST /step-tasks/fail":                                        true,
	"POST /step-tasks/heartbeat":                                   true,
	"POST /namespaces/{namespace}/task-exchange":                   true,
	"POST /dag-check":                                              true,
	"POST /peer/{op}":                                              true,
}

// audited reports whether a route's calls go in the audit log.
func audited(method, path string) bool {
	return method != http.MethodGet && method != http.MethodHead && !unaudited[method+" "+strings.TrimPrefix(path, prefix)]
}

// auditNote carries what the handler read of a request's body to the audit
// entry written after it answered.
type auditNote struct {
	body []byte
	size int
}

type auditNoteKey struct{}

// noteBody keeps the start of a body for the audit entry of its request.
func noteBody(ctx context.Context, data []byte) {
	if n, ok := ctx.Value(auditNoteKey{}).(*auditNote); ok {
		n.size = len(data)
		if len(data) <= maxAuditBody {
			n.body = append([]byte(nil), data...)
		}
	}
}

// maxAuditBody is the largest body an audit entry keeps (a bigger one is
// recorded by its size).
const maxAuditBody = 8 << 10

// secretFields are removed from a body before it is recorded.
var secretFields = map[string]bool{"password": true, "token": true, "secret": true, "current_password": true, "new_password": true}

// scrub removes secret fields at any depth of a JSON value.
func scrub(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if secretFields[strings.ToLower(k)] {
				t[k] = "[removed]"
				continue
			}
			t[k] = scrub(e)
		}
	case []any:
		for i, e := range t {
			t[i] = scrub(e)
		}
	}
	return v
}

// auditEntry is the entry of a request answered with status; refused, why
// it was (nil: it was not refused, or why is not known).
func auditEntry(r *http.Request, route Route, status int, note *auditNote, refused error) store.AuditEntry {
	id, _ := access.FromContext(r.Context())
	actor := id.Name
	if actor == "" {
		actor = "(unauthenticated)"
	}
	// The id starts with the time in nanoseconds: the store orders entries
	// of one millisecond by their ids, so they list in the order they
	// happened (on one node).
	now := time.Now().UTC()
	e := store.AuditEntry{ID: entryID(now), Time: now, Namespace: r.PathValue("namespace"), Actor: actor,
		Remote: r.RemoteAddr, Action: route.Method + " " + strings.TrimPrefix(route.Path, prefix), Status: int32(status),
		RunID: r.URL.Query().Get("run_id")}
	for _, p := range []string{"workflow_id", "schedule_id", "batch_id", "id", "name", "user", "type", "op"} {
		if v := r.PathValue(p); v != "" {
			e.Target = v
			break
		}
	}
	detail := map[string]any{}
	if refused != nil {
		_, body := errorOf(refused)
		detail["reason"] = body.Message
	}
	if q := r.URL.Query(); len(q) > 0 {
		detail["query"] = q
	}
	switch {
	case note.body != nil:
		var v any
		if json.Unmarshal(note.body, &v) == nil {
			detail["body"] = scrub(v)
		} else {
			detail["body_bytes"] = note.size
		}
	case note.size > 0:
		detail["body_bytes"] = note.size
	}
	if m, ok := detail["body"].(map[string]any); ok {
		if run, ok := m["run_id"].(string); ok && e.RunID == "" {
			e.RunID = run
		}
		// What the body names when the path does not: a start's workflow,
		// a token's user, a new namespace, the user logging in.
		for _, f := range []string{"workflow_id", "id", "user", "name"} {
			if v, ok := m[f].(string); ok && v != "" && e.Target == "" {
				e.Target = v
			}
		}
	}
	if len(detail) > 0 {
		e.Detail, _ = json.Marshal(detail)
		if len(e.Detail) > 64<<10 {
			e.Detail = fmt.Appendf(nil, `{"detail_bytes":%d}`, len(e.Detail))
		}
	}
	if id.Kind != "" && id.Kind != access.KindUser && id.Kind != access.KindAnonymous {
		e.Actor = fmt.Sprintf("%s (%s)", actor, id.Kind)
	}
	return clip(e)
}

// entryID is a new entry's id: the time in nanoseconds, then random bytes.
func entryID(t time.Time) string {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 12), uint64(t.UnixNano()))
	b = b[:12]
	rand.Read(b[8:])
	return hex.EncodeToString(b)
}

// clip keeps an entry's fields within the store's limits.
func clip(e store.AuditEntry) store.AuditEntry {
	cut := func(s string, n int) string {
		if len(s) <= n {
			return s
		}
		return strings.ToValidUTF8(s[:n], "")
	}
	e.Namespace, e.Actor, e.Remote = cut(e.Namespace, 256), cut(e.Actor, 256), cut(e.Remote, 256)
	e.Action, e.Target, e.RunID = cut(e.Action, 512), cut(e.Target, 1000), cut(e.RunID, 64)
	return e
}

// AuditList is a page of the audit log.
type AuditList struct {
	Entries       []AuditEntry `json:"entries"`
	NextPageToken []byte       `json:"next_page_token,omitempty"`
}

// AuditEntry is an entry of the audit log as the API shows it: its detail
// (the request's query and body, secrets removed) is JSON.
type AuditEntry struct {
	ID        string    `json:"id"`
	Time      time.Time `json:"time"`
	Namespace string    `json:"namespace,omitempty"`
	Actor     string    `json:"actor"`
	Remote    string    `json:"remote,omitempty"`
	// Action is the route: "POST /namespaces/{namespace}/workflows".
	Action string `json:"action"`
	// Target is what the path named: a workflow, schedule, batch, user.
	Target string `json:"target,omitempty"`
	RunID  string `json:"run_id,omitempty"`
	// Status is the HTTP status of the answer.
	Status int32           `json:"status"`
	Detail json.RawMessage `json:"detail,omitempty"`
}

// Repeats is how many refused calls like the first of its source a
// folded entry stands for (its detail's count); 0 for any other entry.
func (e AuditEntry) Repeats() int {
	var d struct {
		Count int `json:"count"`
	}
	if json.Unmarshal(e.Detail, &d) != nil {
		return 0
	}
	return d.Count
}

// auditRoutes are the routes of the audit log.
func auditRoutes(h *handler, a *AuditLog) []Route {
	return []Route{
		{"GET", prefix + "/audit", "List the audit log, newest first (a namespace's for its admins, every one's for cluster admins)", get(h, func(ctx context.Context, r *http.Request) (AuditList, error) {
			q := r.URL.Query()
			req := store.ListAuditRequest{Namespace: q.Get("namespace"), Actor: q.Get("actor")}
			id, _ := access.FromContext(ctx)
			if req.Namespace == "" && !id.ClusterAdmin {
				// An admin of namespaces reads one of theirs at a time.
				names, _ := id.Namespaces()
				var theirs []string
				for _, n := range names {
					if id.Can(n, access.Admin) {
						theirs = append(theirs, n)
					}
				}
				if len(theirs) != 1 {
					return AuditList{}, api.InvalidArgument("namespace", "name the namespace whose entries you want (one of %s)", strings.Join(theirs, ", "))
				}
				req.Namespace = theirs[0]
			}
			if req.Namespace != "" && !id.Can(req.Namespace, access.Admin) {
				return AuditList{}, denied(id, "admin in namespace %q", req.Namespace)
			}
			var err error
			if req.Since, err = timeParam(q, "since"); err != nil {
				return AuditList{}, err
			}
			if req.Until, err = timeParam(q, "until"); err != nil {
				return AuditList{}, err
			}
			if req.PageSize, req.PageToken, err = pageParams(r); err != nil {
				return AuditList{}, err
			}
			if !req.Since.IsZero() && req.Since.After(req.Until) && !req.Until.IsZero() {
				// A range that ends before it begins holds no entry, as a
				// list of runs by an inverted time range holds no run.
				return AuditList{Entries: []AuditEntry{}}, nil
			}
			page, err := a.st.ListAudit(ctx, req)
			if err != nil {
				return AuditList{}, err
			}
			out := AuditList{Entries: make([]AuditEntry, len(page.Entries)), NextPageToken: page.NextPageToken}
			for i, e := range page.Entries {
				out.Entries[i] = AuditEntry{ID: e.ID, Time: e.Time, Namespace: e.Namespace, Actor: e.Actor, Remote: e.Remote,
					Action: e.Action, Target: e.Target, RunID: e.RunID, Status: e.Status, Detail: json.RawMessage(e.Detail)}
			}
			return out, nil
		}).with(noNULParam("namespace", "only this namespace's entries"), noNULParam("actor", "only this caller's entries"),
			param{"since", map[string]any{"type": "string", "format": "date-time"}, "entries at or after this time (RFC 3339)"},
			param{"until", map[string]any{"type": "string", "format": "date-time"}, "entries before this time (RFC 3339)"},
			intQuery("page_size", 0, 1000, "entries per page (0: 100)"), bytesQuery("page_token", "next_page_token of the page before"))},
	}
}

// auditing wraps a route's handler so that its calls go in the audit log:
// every call of a route that changes things, and the calls of the others
// (reads, task traffic, peering) that it refused.
func (h *handler) auditing(route Route, serve http.HandlerFunc) http.HandlerFunc {
	if h.opts.Audit == nil {
		return serve
	}
	changes := audited(route.Method, route.Path)
	return func(w http.ResponseWriter, r *http.Request) {
		note := &auditNote{}
		if changes {
			r = r.WithContext(context.WithValue(r.Context(), auditNoteKey{}, note))
		}
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		serve(sw, r)
		if changes || refusal(int32(sw.status)) {
			h.opts.Audit.record(r.Context(), auditEntry(r, route, sw.status, note, sw.err))
		}
	}
}

// recordRefused records a call refused before its handler (401, 403) or by
// the open-mode guard.
func (h *handler) recordRefused(r *http.Request, route Route, err error) {
	if h.opts.Audit == nil {
		return
	}
	status, _ := errorOf(err)
	if status == http.StatusUnauthorized && route.Method == http.MethodGet && strings.TrimPrefix(route.Path, prefix) == "/whoami" &&
		r.Header.Get("Authorization") == "" {
		// The console asks who it is before any page: without a session
		// its 401 is the answer "no one", not a refusal.
		return
	}
	h.opts.Audit.record(r.Context(), auditEntry(r, route, status, &auditNote{}, err))
}
