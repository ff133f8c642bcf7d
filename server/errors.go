package server

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/strandhq/strand/access"
	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// Error is the JSON body of every error response: a stable code a program
// switches on, a message for people and, for bad input, the field at fault.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
	// WorkflowID and RunID name the run that blocked a start (code
	// already_started).
	WorkflowID string `json:"workflow_id,omitempty"`
	RunID      string `json:"run_id,omitempty"`
}

// Error codes.
const (
	CodeInvalidArgument    = "invalid_argument"
	CodePayloadTooLarge    = "payload_too_large"
	CodeNamespaceNotFound  = "namespace_not_found"
	CodeNotFound           = "not_found"
	CodeAlreadyStarted     = "already_started"
	CodeAlreadyExists      = "already_exists"
	CodeConflict           = "conflict"
	CodeRunClosed          = "run_closed"
	CodeFailedPrecondition = "failed_precondition"
	CodeTaskNotFound       = "task_not_found"
	CodeQueryFailed        = "query_failed"
	CodeUnavailable        = "unavailable"
	CodeRateLimited        = "rate_limited"
	CodeTimeout            = "timeout"
	CodeInternal           = "internal"
	CodeUnauthenticated    = "unauthenticated"
	CodePermissionDenied   = "permission_denied"
	CodeQuotaExceeded      = "quota_exceeded"
	// CodeRequestTimeout (408): the request's body did not arrive in time
	// (slower than the server's minimum rate, or not whole within its body
	// timeout); nothing was done.
	CodeRequestTimeout = "request_timeout"
)

// kinds maps the errors a caller switches on to their code and status, in
// the order they are tested (payload_too_large before invalid_argument,
// already_started before not_found), both ways.
var kinds = []struct {
	sentinel error
	code     string
	status   int
}{
	{store.ErrPayloadTooLarge, CodePayloadTooLarge, http.StatusRequestEntityTooLarge},
	{api.ErrInvalidArgument, CodeInvalidArgument, http.StatusBadRequest},
	{store.ErrInvalidPageToken, CodeInvalidArgument, http.StatusBadRequest},
	{api.ErrNamespaceNotFound, CodeNamespaceNotFound, http.StatusNotFound},
	{api.ErrAlreadyStarted, CodeAlreadyStarted, http.StatusConflict},
	{api.ErrNotFound, CodeNotFound, http.StatusNotFound},
	{api.ErrAlreadyExists, CodeAlreadyExists, http.StatusConflict},
	{api.ErrConflict, CodeConflict, http.StatusConflict},
	{api.ErrRunClosed, CodeRunClosed, http.StatusConflict},
	{api.ErrFailedPrecondition, CodeFailedPrecondition, http.StatusConflict},
	{api.ErrTaskNotFound, CodeTaskNotFound, http.StatusNotFound},
	{api.ErrQueryFailed, CodeQueryFailed, http.StatusUnprocessableEntity},
	{api.ErrNoWorker, "no_worker", http.StatusConflict},
	{api.ErrUnavailable, CodeUnavailable, http.StatusServiceUnavailable},
	{api.ErrUnauthenticated, CodeUnauthenticated, http.StatusUnauthorized},
	{api.ErrPermissionDenied, CodePermissionDenied, http.StatusForbidden},
	{api.ErrQuotaExceeded, CodeQuotaExceeded, http.StatusTooManyRequests},
	{access.ErrTooManyLogins, CodeRateLimited, http.StatusTooManyRequests},
	{errTooManyPolls, CodeRateLimited, http.StatusTooManyRequests},
	{errSlowBody, CodeRequestTimeout, http.StatusRequestTimeout},
	{context.DeadlineExceeded, CodeTimeout, http.StatusGatewayTimeout},
	{context.Canceled, CodeTimeout, http.StatusGatewayTimeout},
}

// errorOf maps an error to its status and body.
func errorOf(err error) (int, Error) {
	body := Error{Code: CodeInternal, Message: err.Error()}
	var ia *store.InvalidArgumentError
	if errors.As(err, &ia) {
		body.Field = ia.Field
	}
	var ae *api.AlreadyStartedError
	if errors.As(err, &ae) {
		body.WorkflowID, body.RunID = ae.WorkflowID, ae.RunID
	}
	for _, k := range kinds {
		if errors.Is(err, k.sentinel) {
			body.Code = k.code
			return k.status, body
		}
	}
	return http.StatusInternalServerError, body
}

// Err turns an error body back into the error a caller switches on, as the
// embedded engine would have returned it.
func (e Error) Err() error {
	switch e.Code {
	case CodeInvalidArgument:
		// The message is the error's whole text; keep only its reason, so
		// that the error reads as it did on the server.
		reason := strings.TrimPrefix(e.Message, store.InvalidArgument(e.Field, "").Error())
		return store.InvalidArgument(e.Field, "%s", reason)
	case CodeAlreadyStarted:
		return &api.AlreadyStartedError{WorkflowID: e.WorkflowID, RunID: e.RunID}
	case CodeRateLimited:
		return wrap(api.ErrUnavailable, e.Message)
	}
	for _, k := range kinds {
		if k.code == e.Code {
			return wrap(k.sentinel, e.Message)
		}
	}
	return errors.New(e.Message)
}

// remoteError keeps the server's message while matching the sentinel.
type remoteError struct {
	sentinel error
	message  string
}

func (e *remoteError) Error() string { return e.message }
func (e *remoteError) Unwrap() error { return e.sentinel }

func wrap(sentinel error, message string) error { return &remoteError{sentinel, message} }
