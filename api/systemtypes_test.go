package api_test

import (
	"slices"
	"testing"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/batch"
	"github.com/strandhq/strand/schedule"
)

// TestSystemWorkflowTypes: the types lists leave out as Strand's own are
// those its system workflows run under.
func TestSystemWorkflowTypes(t *testing.T) {
	for _, typ := range []string{schedule.WorkflowType, batch.WorkflowType, api.MailboxWorkflowType, api.HumanTaskWorkflowType} {
		if !slices.Contains(api.SystemWorkflowTypes, typ) {
			t.Errorf("api.SystemWorkflowTypes %v lacks %s", api.SystemWorkflowTypes, typ)
		}
	}
}
