package store

import (
	"errors"
	"fmt"
)

// Sentinel errors returned by every backend. Callers test them with errors.Is;
// richer errors (such as *WorkflowExistsError) wrap one of these. The ones
// that reach users through the API (a bad argument, a payload too large,
// an unknown namespace) read without the package's prefix.
var (
	// ErrShardOwnershipLost means the write was conditioned on a range_id that is
	// no longer the shard's: another owner acquired the shard. Nothing was written.
	ErrShardOwnershipLost = errors.New("store: shard ownership lost")
	// ErrShardNotFound means the shard was never acquired.
	ErrShardNotFound = errors.New("store: shard not found")
	// ErrConditionFailed means a run's db version or current-run condition did
	// not hold. Nothing of the batch was written.
	ErrConditionFailed = errors.New("store: condition failed")
	// ErrWorkflowExists means a run could not be created because the workflow id
	// already has a current run and the write did not expect it.
	ErrWorkflowExists = errors.New("store: workflow already exists")
	// ErrDuplicateRequest means a request id was already recorded for this
	// workflow and kind and has not expired. Nothing of the batch was written.
	ErrDuplicateRequest = errors.New("store: duplicate request")
	// ErrNotFound means the row asked for does not exist.
	ErrNotFound = errors.New("store: not found")
	// ErrNamespaceNotFound means the namespace named by a request does not exist.
	ErrNamespaceNotFound = errors.New("namespace not found")
	// ErrNamespaceExists means a namespace of that name already exists.
	ErrNamespaceExists = errors.New("store: namespace already exists")
	// ErrDefinitionExists means a definition with that type and version exists
	// with a different content hash.
	ErrDefinitionExists = errors.New("store: definition version already exists")
	// ErrChecksumMismatch means stored state did not match its checksum on read.
	ErrChecksumMismatch = errors.New("store: checksum mismatch")
	// ErrInvalidArgument means the request itself is malformed (empty ids,
	// negative sizes, ...). Nothing was written.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrPayloadTooLarge means a payload is above the hard size limit.
	ErrPayloadTooLarge = errors.New("payload too large")
	// ErrInvalidPageToken means a page token was not produced by this query.
	// It is a kind of ErrInvalidArgument: errors.Is matches both.
	ErrInvalidPageToken error = &narrowError{"invalid page token", ErrInvalidArgument}
	// ErrOutcomeUnknown means a write may or may not have been applied (a
	// timeout the backend could not resolve by reading). The caller must
	// reload what it wrote before deciding anything from it.
	ErrOutcomeUnknown = errors.New("store: outcome unknown")
)

// narrowError is a sentinel that is a narrower kind of another: it unwraps
// to it.
type narrowError struct {
	msg   string
	broad error
}

func (e *narrowError) Error() string { return e.msg }
func (e *narrowError) Unwrap() error { return e.broad }

// InvalidArgumentError names the field at fault in a malformed request. It
// wraps ErrInvalidArgument (or ErrPayloadTooLarge for size limits, or
// ErrInvalidPageToken for a page token).
type InvalidArgumentError struct {
	Field  string
	Reason string
	err    error
}

func (e *InvalidArgumentError) Error() string {
	return fmt.Sprintf("%v: %s: %s", e.Unwrap(), e.Field, e.Reason)
}

// Unwrap returns ErrInvalidArgument, ErrPayloadTooLarge or ErrInvalidPageToken.
func (e *InvalidArgumentError) Unwrap() error {
	if e.err == nil {
		return ErrInvalidArgument
	}
	return e.err
}

// InvalidArgument returns an *InvalidArgumentError for field.
func InvalidArgument(field, format string, args ...any) error {
	return &InvalidArgumentError{Field: field, Reason: fmt.Sprintf(format, args...), err: ErrInvalidArgument}
}

func invalid(field, format string, args ...any) error { return InvalidArgument(field, format, args...) }

// PayloadTooLarge returns the error for a value of size bytes above limit.
func PayloadTooLarge(field string, size, limit int) error { return tooLarge(field, size, limit) }

func tooLarge(field string, size, limit int) error {
	return &InvalidArgumentError{
		Field:  field,
		Reason: fmt.Sprintf("%d bytes is above the limit of %d", size, limit),
		err:    ErrPayloadTooLarge,
	}
}

// ShardOwnershipLostError reports the range_id a write expected and the one the
// shard holds now. It wraps ErrShardOwnershipLost.
type ShardOwnershipLostError struct {
	ShardID         int32
	ExpectedRangeID int64
	ActualRangeID   int64
}

func (e *ShardOwnershipLostError) Error() string {
	return fmt.Sprintf("%v: shard %d has range_id %d, write expected %d",
		ErrShardOwnershipLost, e.ShardID, e.ActualRangeID, e.ExpectedRangeID)
}

func (e *ShardOwnershipLostError) Unwrap() error { return ErrShardOwnershipLost }

// ConditionFailedError says which run's condition failed and why. It wraps
// ErrConditionFailed.
type ConditionFailedError struct {
	Run    RunKey
	Reason string
}

func (e *ConditionFailedError) Error() string {
	return fmt.Sprintf("%v: %s: %s", ErrConditionFailed, e.Run, e.Reason)
}

func (e *ConditionFailedError) Unwrap() error { return ErrConditionFailed }

// WorkflowExistsError carries the current run that blocked a create. It wraps
// ErrWorkflowExists.
type WorkflowExistsError struct {
	Current CurrentExecution
}

func (e *WorkflowExistsError) Error() string {
	return fmt.Sprintf("%v: %s/%s has current run %s (state %s)", ErrWorkflowExists,
		e.Current.Namespace, e.Current.WorkflowID, e.Current.RunID, e.Current.State)
}

func (e *WorkflowExistsError) Unwrap() error { return ErrWorkflowExists }

// DuplicateRequestError carries the request row that was already recorded. It
// wraps ErrDuplicateRequest.
type DuplicateRequestError struct {
	Existing Request
}

func (e *DuplicateRequestError) Error() string {
	return fmt.Sprintf("%v: %s request %q for %s/%s already applied to run %s", ErrDuplicateRequest,
		e.Existing.Kind, e.Existing.RequestID, e.Existing.Namespace, e.Existing.WorkflowID, e.Existing.RunID)
}

func (e *DuplicateRequestError) Unwrap() error { return ErrDuplicateRequest }
