package store

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// AddPayload returns data as a Payload for run: inline when it is at most
// the document threshold, otherwise as a reference to a document that the
// batch now carries (once per run and content). Data above the hard limit is
// refused with ErrPayloadTooLarge.
func (b *Batch) AddPayload(run RunKey, data []byte, l Limits) (Payload, error) {
	if len(data) > l.MaxPayload {
		return Payload{}, tooLarge("payload", len(data), l.MaxPayload)
	}
	if len(data) <= l.DocumentThreshold {
		return Payload{Data: data}, nil
	}
	sum := sha256.Sum256(data)
	id := hex.EncodeToString(sum[:])
	ref := &DocumentRef{ID: id, Size: int64(len(data))}
	for _, d := range b.Documents {
		if d.ID == id && d.Run == run {
			return Payload{Doc: ref}, nil
		}
	}
	b.Documents = append(b.Documents, Document{Run: run, ID: id, Data: data})
	return Payload{Doc: ref}, nil
}

// Validate checks a batch against the contract before a backend applies it,
// so that every backend refuses the same malformed batches with the same
// errors.
func (b *Batch) Validate(l Limits) error {
	if b.ShardID < 0 {
		return invalid("shard_id", "negative")
	}
	if b.RangeID <= 0 {
		return invalid("range_id", "must be positive")
	}
	if len(b.Runs) == 0 && len(b.Tasks) == 0 && len(b.Requests) == 0 && len(b.Documents) == 0 &&
		len(b.CompleteTasks) == 0 && b.AckLevels == nil && len(b.DeleteRuns) == 0 {
		return invalid("batch", "empty")
	}
	seen := make(map[RunKey]bool, len(b.Runs))
	for i, w := range b.Runs {
		if err := w.validate(fmt.Sprintf("runs[%d]", i), l); err != nil {
			return err
		}
		if seen[w.Execution.RunKey] {
			return invalid(fmt.Sprintf("runs[%d]", i), "run %s written twice in one batch", w.Execution.RunKey)
		}
		seen[w.Execution.RunKey] = true
	}
	for i, t := range b.Tasks {
		if err := t.validate(fmt.Sprintf("tasks[%d]", i), l); err != nil {
			return err
		}
	}
	for i, r := range b.Requests {
		f := fmt.Sprintf("requests[%d]", i)
		if err := r.Key().validate(f); err != nil {
			return err
		}
		if r.RunID == "" {
			return invalid(f+".run_id", "empty")
		}
		if !r.ExpiresAt.After(r.CreatedAt) {
			return invalid(f+".expires_at", "not after created_at")
		}
	}
	for i, d := range b.Documents {
		f := fmt.Sprintf("documents[%d]", i)
		if err := d.Run.Validate(f + ".run"); err != nil {
			return err
		}
		if len(d.Data) > l.MaxPayload {
			return tooLarge(f+".data", len(d.Data), l.MaxPayload)
		}
		sum := sha256.Sum256(d.Data)
		if d.ID != hex.EncodeToString(sum[:]) {
			return invalid(f+".id", "is not the SHA-256 of the data")
		}
	}
	for i, r := range b.CompleteTasks {
		if !r.Category.Valid() {
			return invalid(fmt.Sprintf("complete_tasks[%d].category", i), "unknown category %d", r.Category)
		}
	}
	for i, k := range b.DeleteRuns {
		if err := k.Validate(fmt.Sprintf("delete_runs[%d]", i)); err != nil {
			return err
		}
	}
	return nil
}

func (w RunWrite) validate(f string, l Limits) error {
	e := w.Execution
	if e == nil {
		return invalid(f+".execution", "missing")
	}
	if err := e.RunKey.Validate(f + ".execution"); err != nil {
		return err
	}
	if w.ExpectedDBVersion < 0 {
		return invalid(f+".expected_db_version", "negative")
	}
	if e.DBVersion <= w.ExpectedDBVersion {
		return invalid(f+".execution.db_version", "%d is not above the expected %d", e.DBVersion, w.ExpectedDBVersion)
	}
	if e.NextEventID < 1 {
		return invalid(f+".execution.next_event_id", "must be at least 1")
	}
	if !e.Status.Valid() {
		return invalid(f+".execution.status", "unknown status %d", e.Status)
	}
	if e.State < StateCreated || e.State > StateClosed {
		return invalid(f+".execution.state", "unknown state %d", e.State)
	}
	switch w.Current {
	case CurrentNone, CurrentUpdate:
	case CurrentCreate:
		if w.ExpectedDBVersion != 0 {
			return invalid(f+".current", "a run is created only with expected_db_version 0")
		}
	case CurrentReplace:
		if w.PrevRunID == "" {
			return invalid(f+".prev_run_id", "empty for CurrentReplace")
		}
		if w.ExpectedDBVersion != 0 {
			return invalid(f+".current", "a run is created only with expected_db_version 0")
		}
	default:
		return invalid(f+".current", "unknown mode %d", w.Current)
	}
	next := int64(0)
	for i, h := range w.History {
		hf := fmt.Sprintf("%s.history[%d]", f, i)
		if h.FirstEventID < 1 || h.LastEventID < h.FirstEventID {
			return invalid(hf, "bad event ids %d..%d", h.FirstEventID, h.LastEventID)
		}
		if next != 0 && h.FirstEventID != next {
			return invalid(hf, "first event %d does not follow %d", h.FirstEventID, next-1)
		}
		if len(h.Events) > l.MaxPayload {
			return tooLarge(hf+".events", len(h.Events), l.MaxPayload)
		}
		next = h.LastEventID + 1
	}
	if next != 0 && next != e.NextEventID {
		return invalid(f+".execution.next_event_id", "%d does not follow the last history event %d", e.NextEventID, next-1)
	}
	return nil
}

func (t Task) validate(f string, l Limits) error {
	if !t.Category.Valid() {
		return invalid(f+".category", "unknown category %d", t.Category)
	}
	if t.Key.TaskID <= 0 {
		return invalid(f+".task_id", "must be positive")
	}
	if t.Partition != "" {
		if err := validID(f+".partition", t.Partition); err != nil {
			return err
		}
	}
	if (t.Category == CategoryTimer) == t.Key.FireTime.IsZero() {
		return invalid(f+".fire_time", "set for timer tasks and only for them")
	}
	if len(t.Data) > l.MaxPayload {
		return tooLarge(f+".data", len(t.Data), l.MaxPayload)
	}
	return nil
}

func (k RequestKey) validate(f string) error {
	switch {
	case k.Kind < RequestStart || k.Kind > RequestTerminate:
		return invalid(f+".kind", "unknown kind %d", k.Kind)
	case k.Namespace == "":
		return invalid(f+".namespace", "empty")
	case k.WorkflowID == "":
		return invalid(f+".workflow_id", "empty")
	case k.RequestID == "":
		return invalid(f+".request_id", "empty")
	}
	if err := validID(f+".request_id", k.RequestID); err != nil {
		return err
	}
	return (RunKey{k.Namespace, k.WorkflowID, "-"}).Validate(f)
}

// Validate checks a dedup row's key.
func (k RequestKey) Validate() error { return k.validate("request") }

// Validate checks a shard acquisition.
func (r AcquireShardRequest) Validate() error {
	if r.ShardID < 0 {
		return invalid("shard_id", "negative")
	}
	if r.Owner == "" && r.PrevRangeID == 0 {
		return invalid("owner", "empty (an owner releases a shard with an empty owner and its range_id)")
	}
	if r.PrevRangeID < 0 {
		return invalid("prev_range_id", "negative")
	}
	return nil
}

// Validate checks a history read.
func (r ReadHistoryRequest) Validate() error {
	if r.ShardID < 0 {
		return invalid("shard_id", "negative")
	}
	if err := r.Run.Validate("run"); err != nil {
		return err
	}
	if r.FromEventID < 0 {
		return invalid("from_event_id", "negative")
	}
	return validPageSize(r.PageSize)
}

// Validate checks a task read.
func (r ReadTasksRequest) Validate() error {
	if r.ShardID < 0 {
		return invalid("shard_id", "negative")
	}
	if !r.Range.Category.Valid() {
		return invalid("category", "unknown category %d", r.Range.Category)
	}
	return validPageSize(r.PageSize)
}

// MaxFilterStatuses bounds RunFilter.Statuses: one entry per status.
const MaxFilterStatuses = int(StatusTimedOut)

// MaxFilterAttributes bounds RunFilter.Attributes: each is a subquery on
// the SQL backends, and SQLite refuses a few hundred of them.
const MaxFilterAttributes = 32

// MaxFilterExcludeTypes bounds RunFilter.ExcludeTypes.
const MaxFilterExcludeTypes = 32

// Validate checks a filter.
func (f RunFilter) Validate() error {
	if f.Namespace == "" {
		return invalid("namespace", "empty")
	}
	if len(f.Statuses) > MaxFilterStatuses {
		return invalid("statuses", "%d statuses; at most %d (one per status)", len(f.Statuses), MaxFilterStatuses)
	}
	if len(f.Attributes) > MaxFilterAttributes {
		return invalid("attributes", "%d attributes; at most %d", len(f.Attributes), MaxFilterAttributes)
	}
	for _, s := range f.Statuses {
		if !s.Valid() {
			return invalid("statuses", "unknown status %d", s)
		}
	}
	for k := range f.Attributes {
		if k == "" {
			return invalid("attributes", "empty attribute name")
		}
	}
	if len(f.ExcludeTypes) > MaxFilterExcludeTypes {
		return invalid("exclude_workflow_types", "%d types; at most %d", len(f.ExcludeTypes), MaxFilterExcludeTypes)
	}
	for _, p := range []struct{ field, prefix string }{
		{"workflow_id_prefix", f.WorkflowIDPrefix},
		{"business_key_prefix", f.BusinessKeyPrefix},
	} {
		if !utf8.ValidString(p.prefix) || strings.ContainsRune(p.prefix, 0) {
			return invalid(p.field, "not valid UTF-8 text (or contains NUL)")
		}
	}
	return nil
}

// Validate checks a list request.
func (r ListRunsRequest) Validate() error {
	if err := r.RunFilter.Validate(); err != nil {
		return err
	}
	return validPageSize(r.PageSize)
}

// Validate checks a visibility record.
func (r VisibilityRecord) Validate() error {
	if err := (RunKey{r.Namespace, r.WorkflowID, r.RunID}).Validate("record"); err != nil {
		return err
	}
	if !r.Status.Valid() {
		return invalid("status", "unknown status %d", r.Status)
	}
	if r.StartTime.IsZero() {
		return invalid("start_time", "zero")
	}
	for k := range r.Attributes {
		if k == "" {
			return invalid("attributes", "empty attribute name")
		}
	}
	return nil
}

// Validate checks a namespace.
func (n Namespace) Validate() error {
	if n.Name == "" {
		return invalid("name", "empty")
	}
	if len(n.Name) > 255 {
		return invalid("name", "longer than 255 bytes")
	}
	if err := CheckLimits(&n); err != nil {
		return err
	}
	if n.Retention < 0 || n.Retention > 0 && n.Retention < MinRetention {
		return invalid("retention", "%s: want at least %s (or 0 for the default)", n.Retention, MinRetention)
	}
	return nil
}

// Validate checks a node.
func (n Node) Validate() error {
	if n.ID == "" {
		return invalid("id", "empty")
	}
	if n.ExpiresAt.IsZero() {
		return invalid("expires_at", "zero")
	}
	return nil
}

// Validate checks a definition.
func (d Definition) Validate(l Limits) error {
	if d.Type == "" {
		return invalid("type", "empty")
	}
	if d.Version < 0 {
		return invalid("version", "negative")
	}
	if len(d.Body) == 0 {
		return invalid("body", "empty")
	}
	if len(d.Body) > l.MaxPayload {
		return tooLarge("body", len(d.Body), l.MaxPayload)
	}
	if err := CheckLimits(&d); err != nil {
		return err
	}
	return nil
}

// MaxRecordValue bounds a record's value: records are small documents,
// read whole and listed whole.
const MaxRecordValue = 1 << 20

// Validate checks a record before it is written.
func (r Record) Validate(l Limits) error {
	if err := validRecordKey(r.Kind, r.Key); err != nil {
		return err
	}
	if r.Version < 0 {
		return invalid("version", "negative")
	}
	if limit := min(MaxRecordValue, l.MaxPayload); len(r.Value) > limit {
		return tooLarge("value", len(r.Value), limit)
	}
	return CheckLimits(&r)
}

// ValidateRecordKey checks the kind and key of a record to read or
// delete.
func ValidateRecordKey(kind, key string) error {
	if err := validRecordKey(kind, key); err != nil {
		return err
	}
	return CheckLimits(&Record{Kind: kind, Key: key})
}

// validRecordKey checks what the limits' tags do not: a kind and a key
// are set, and are text.
func validRecordKey(kind, key string) error {
	switch {
	case kind == "":
		return invalid("kind", "empty")
	case key == "":
		return invalid("key", "empty")
	}
	if err := validText("kind", kind); err != nil {
		return err
	}
	return validText("key", key)
}

// ValidateRecordPrefix checks the kind and the key prefix of a listing of
// records; the prefix may be empty.
func ValidateRecordPrefix(kind, prefix string) error {
	if kind == "" {
		return invalid("kind", "empty")
	}
	if err := validText("kind", kind); err != nil {
		return err
	}
	if err := validText("prefix", prefix); err != nil {
		return err
	}
	return CheckLimits(&Record{Kind: kind, Key: prefix})
}

// validText checks what every backend's text type needs: valid UTF-8
// without NUL.
func validText(field, v string) error {
	switch {
	case !utf8.ValidString(v):
		return invalid(field, "not valid UTF-8")
	case strings.IndexByte(v, 0) >= 0:
		return invalid(field, "contains NUL")
	}
	return nil
}

// Validate checks an audit entry before it is written.
func (e AuditEntry) Validate() error {
	if e.ID == "" {
		return invalid("id", "empty")
	}
	if e.Time.IsZero() {
		return invalid("time", "zero")
	}
	for _, f := range []struct{ field, v string }{
		{"id", e.ID}, {"namespace", e.Namespace}, {"actor", e.Actor}, {"remote", e.Remote},
		{"action", e.Action}, {"target", e.Target}, {"run_id", e.RunID},
	} {
		if err := validText(f.field, f.v); err != nil {
			return err
		}
	}
	return CheckLimits(&e)
}

// ValidateAudit checks the entries of an AppendAudit; the field of an
// error names the entry at fault (entries[2].id).
func ValidateAudit(entries []AuditEntry) error {
	for i, e := range entries {
		if err := e.Validate(); err != nil {
			return under(err, fmt.Sprintf("entries[%d]", i))
		}
	}
	return nil
}

// Validate checks an audit listing.
func (r ListAuditRequest) Validate() error {
	if err := validText("namespace", r.Namespace); err != nil {
		return err
	}
	if err := validText("actor", r.Actor); err != nil {
		return err
	}
	if !r.Since.IsZero() && !r.Until.IsZero() && r.Since.After(r.Until) {
		return invalid("since", "%s is after until %s", r.Since.Format(time.RFC3339Nano), r.Until.Format(time.RFC3339Nano))
	}
	return validPageSize(r.PageSize)
}

// ValidatePurgeAudit checks the arguments of PurgeAudit.
func ValidatePurgeAudit(before time.Time, limit int) error {
	if before.IsZero() {
		return invalid("before", "zero")
	}
	if limit <= 0 {
		return invalid("limit", "%d: must be positive", limit)
	}
	return nil
}

// PageSize returns n, or def when n is 0.
func PageSize(n, def int) int {
	if n == 0 {
		return def
	}
	return n
}

func validPageSize(n int) error {
	if n < 0 || n > MaxPageSize {
		return invalid("page_size", "%d is outside 0..%d", n, MaxPageSize)
	}
	return nil
}

// InvalidPageToken returns the error for a token a backend could not
// decode: an *InvalidArgumentError of field page_token that matches
// ErrInvalidPageToken and ErrInvalidArgument.
func InvalidPageToken(cause error) error {
	return &InvalidArgumentError{Field: "page_token", Reason: cause.Error(), err: ErrInvalidPageToken}
}

// Now is the store's clock reading: UTC at Precision.
func Now() time.Time { return Time(time.Now()) }

// BodySHA1 is the hex SHA-1 of the definition's body, the hash stored in
// its SHA1 field (nFlow's definition_sha1).
func (d Definition) BodySHA1() string {
	sum := sha1.Sum(d.Body)
	return hex.EncodeToString(sum[:])
}
