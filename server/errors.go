package server

import (
	"context"
	"errors"
	"net/http"

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
	CodeInvalidArgument   = "invalid_argument"
	CodePayloadTooLarge   = "payload_too_large"
	CodeNamespaceNotFound = "namespace_not_found"
	CodeNotFound          = "not_found"
	CodeAlreadyStarted    = "already_started"
	CodeAlreadyExists     = "already_exists"
	CodeConflict          = "conflict"
	CodeRunClosed         = "run_closed"
	CodeTaskNotFound      = "task_not_found"
	CodeQueryFailed       = "query_failed"
	CodeUnavailable       = "unavailable"
	CodeRateLimited       = "rate_limited"
	CodeTimeout           = "timeout"
	CodeInternal          = "internal"
)

// errorOf maps an error to its status and body.
func errorOf(err error) (int, Error) {
	body := Error{Message: err.Error()}
	var ia *store.InvalidArgumentError
	if errors.As(err, &ia) {
		body.Field = ia.Field
	}
	var ae *api.AlreadyStartedError
	switch {
	case errors.Is(err, store.ErrPayloadTooLarge):
		body.Code = CodePayloadTooLarge
		return http.StatusRequestEntityTooLarge, body
	case errors.Is(err, api.ErrInvalidArgument):
		body.Code = CodeInvalidArgument
		return http.StatusBadRequest, body
	case errors.Is(err, api.ErrNamespaceNotFound):
		body.Code = CodeNamespaceNotFound
		return http.StatusNotFound, body
	case errors.As(err, &ae):
		body.Code, body.WorkflowID, body.RunID = CodeAlreadyStarted, ae.WorkflowID, ae.RunID
		return http.StatusConflict, body
	case errors.Is(err, api.ErrNotFound):
		body.Code = CodeNotFound
		return http.StatusNotFound, body
	case errors.Is(err, api.ErrAlreadyExists):
		body.Code = CodeAlreadyExists
		return http.StatusConflict, body
	case errors.Is(err, api.ErrConflict):
		body.Code = CodeConflict
		return http.StatusConflict, body
	case errors.Is(err, api.ErrRunClosed):
		body.Code = CodeRunClosed
		return http.StatusConflict, body
	case errors.Is(err, api.ErrTaskNotFound):
		body.Code = CodeTaskNotFound
		return http.StatusNotFound, body
	case errors.Is(err, api.ErrQueryFailed):
		body.Code = CodeQueryFailed
		return http.StatusUnprocessableEntity, body
	case errors.Is(err, api.ErrUnavailable):
		body.Code = CodeUnavailable
		return http.StatusServiceUnavailable, body
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		body.Code = CodeTimeout
		return http.StatusGatewayTimeout, body
	}
	body.Code = CodeInternal
	return http.StatusInternalServerError, body
}

// Err turns an error body back into the error a caller switches on, as the
// embedded engine would have returned it.
func (e Error) Err() error {
	switch e.Code {
	case CodeInvalidArgument:
		return store.InvalidArgument(e.Field, "%s", e.Message)
	case CodePayloadTooLarge:
		return wrap(store.ErrPayloadTooLarge, e.Message)
	case CodeNamespaceNotFound:
		return wrap(api.ErrNamespaceNotFound, e.Message)
	case CodeAlreadyStarted:
		return &api.AlreadyStartedError{WorkflowID: e.WorkflowID, RunID: e.RunID}
	case CodeNotFound:
		return wrap(api.ErrNotFound, e.Message)
	case CodeAlreadyExists:
		return wrap(api.ErrAlreadyExists, e.Message)
	case CodeConflict:
		return wrap(api.ErrConflict, e.Message)
	case CodeRunClosed:
		return wrap(api.ErrRunClosed, e.Message)
	case CodeTaskNotFound:
		return wrap(api.ErrTaskNotFound, e.Message)
	case CodeQueryFailed:
		return wrap(api.ErrQueryFailed, e.Message)
	case CodeUnavailable, CodeRateLimited:
		return wrap(api.ErrUnavailable, e.Message)
	case CodeTimeout:
		return wrap(context.DeadlineExceeded, e.Message)
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
