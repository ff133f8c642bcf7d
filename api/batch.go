package api

import (
	"context"
	"time"
)

// Batches is what an operator needs to act on many runs at once. Package
// batch implements it over a Service; a remote service over HTTP.
type Batches interface {
	// StartBatch starts a batch operation on every run a filter matches.
	StartBatch(ctx context.Context, req StartBatchRequest) (BatchRef, error)
	DescribeBatch(ctx context.Context, ref BatchRef) (BatchDescription, error)
	ListBatches(ctx context.Context, req ListBatchesRequest) (ListBatchesResponse, error)
	// StopBatch stops a batch; the runs it acted on stay as they are.
	StopBatch(ctx context.Context, req StopBatchRequest) error
}

// BatchOperation is what a batch does to each run.
type BatchOperation string

// Batch operations.
const (
	BatchSignal    BatchOperation = "signal"
	BatchCancel    BatchOperation = "cancel"
	BatchTerminate BatchOperation = "terminate"
	BatchReset     BatchOperation = "reset"
	BatchPause     BatchOperation = "pause"
	BatchResume    BatchOperation = "resume"
)

// BatchOperations lists the operations.
var BatchOperations = []BatchOperation{BatchSignal, BatchCancel, BatchTerminate, BatchReset, BatchPause, BatchResume}

// DefaultBatchRate is the runs a second a batch acts on when it names no rate.
const DefaultBatchRate = 50

// BatchRef names a batch.
type BatchRef struct {
	Namespace string `json:"namespace,omitempty" max:"63"`
	BatchID   string `json:"batch_id" max:"200" id:"true" required:"true"`
}

// StartBatchRequest starts a batch operation.
type StartBatchRequest struct {
	Namespace string `json:"namespace,omitempty" max:"63"`
	// BatchID names the batch (default: a new id); a second start of the
	// same id is ErrAlreadyExists.
	BatchID string `json:"batch_id,omitempty" max:"200" id:"true"`
	// Filter selects the runs, as a list does (its page fields are unused).
	Filter    ListRequest    `json:"filter"`
	Operation BatchOperation `json:"operation" required:"true" example:"cancel"`
	// SignalName and SignalInput are a signal's.
	SignalName  string `json:"signal_name,omitempty" max:"1000"`
	SignalInput Value  `json:"signal_input,omitempty" max:"16777216"`
	// ResetPoint and ResetEventID are a reset's (default last workflow task).
	ResetPoint   ResetPoint `json:"reset_point,omitempty"`
	ResetEventID int64      `json:"reset_event_id,omitempty" minimum:"0"`
	Reason       string     `json:"reason,omitempty" max:"32768"`
	// Rate bounds the runs acted on a second (0: DefaultBatchRate).
	Rate     float64 `json:"rate,omitempty" minimum:"0" maximum:"10000"`
	Identity string  `json:"identity,omitempty" max:"256"`
}

// StopBatchRequest stops a batch.
type StopBatchRequest struct {
	BatchRef
	Identity string `json:"identity,omitempty" max:"256"`
}

// ListBatchesRequest pages through a namespace's batches, newest first.
type ListBatchesRequest struct {
	Namespace string `json:"namespace,omitempty" max:"63"`
	PageSize  int    `json:"page_size,omitempty" minimum:"0" maximum:"1000"`
	PageToken []byte `json:"page_token,omitempty" max:"16384" token:"true"`
}

// ListBatchesResponse is a page of batches.
type ListBatchesResponse struct {
	Batches       []BatchSummary `json:"batches"`
	NextPageToken []byte         `json:"next_page_token,omitempty"`
}

// BatchSummary is a batch as a list shows it.
type BatchSummary struct {
	BatchID   string         `json:"batch_id"`
	Operation BatchOperation `json:"operation"`
	// State is running, completed, stopped or failed.
	State     string    `json:"state"`
	StartTime time.Time `json:"start_time"`
	CloseTime time.Time `json:"close_time,omitzero"`
}

// BatchRunResult is what a batch did to one run.
type BatchRunResult struct {
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	// Error is empty when the operation succeeded.
	Error string `json:"error,omitempty"`
	// NewRunID is a reset's new run.
	NewRunID string `json:"new_run_id,omitempty"`
}

// MaxBatchResults bounds the results a batch keeps for describe: the
// failures first, then the last successes.
const MaxBatchResults = 1000

// BatchDescription is what describe shows of a batch.
type BatchDescription struct {
	Namespace string            `json:"namespace"`
	BatchID   string            `json:"batch_id"`
	Request   StartBatchRequest `json:"request"`
	State     string            `json:"state"`
	// Done counts the runs acted on; Succeeded and Failed split them.
	Done      int64 `json:"done"`
	Succeeded int64 `json:"succeeded"`
	Failed    int64 `json:"failed"`
	// Results are the last results (failures kept first), at most MaxBatchResults.
	Results   []BatchRunResult `json:"results"`
	StartTime time.Time        `json:"start_time"`
	CloseTime time.Time        `json:"close_time,omitzero"`
	// StoppedBy says who stopped it.
	StoppedBy string `json:"stopped_by,omitempty"`
}
