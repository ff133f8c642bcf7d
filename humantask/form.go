package humantask

import (
	"bytes"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// formURL names a task's form while it is compiled.
const formURL = "strand:task-form.json"

// compileForm compiles a task's form, a JSON Schema; nil for no form.
func compileForm(form []byte) (*jsonschema.Schema, error) {
	if len(bytes.TrimSpace(form)) == 0 {
		return nil, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(form))
	if err != nil {
		return nil, fmt.Errorf("the form is not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(formURL, doc); err != nil {
		return nil, fmt.Errorf("the form is not a JSON Schema: %w", err)
	}
	s, err := c.Compile(formURL)
	if err != nil {
		return nil, fmt.Errorf("the form is not a JSON Schema: %w", err)
	}
	return s, nil
}

// checkData checks a completion's data against a task's form: nil when it
// satisfies it (or there is no form), else what is wrong, readably.
func checkData(form, data []byte) error {
	s, err := compileForm(form)
	if err != nil || s == nil {
		return err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("null")
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("the data is not JSON: %w", err)
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Errorf("the data does not satisfy the form: %v", err)
	}
	return nil
}
