package reason

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/ora-runtime/ora/shared/ora"
)

// printer renders validation messages in English.
var printer = message.NewPrinter(language.English)

// compiled holds the compiled schemas by their source text.
var compiled sync.Map // string -> *jsonschema.Schema

// compileSchema compiles a JSON Schema (draft 2020-12) once.
func compileSchema(src string) (*jsonschema.Schema, error) {
	if s, ok := compiled.Load(src); ok {
		return s.(*jsonschema.Schema), nil
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(src))
	if err != nil {
		return nil, fmt.Errorf("schema is not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("ora:schema.json", doc); err != nil {
		return nil, err
	}
	s, err := c.Compile("ora:schema.json")
	if err != nil {
		return nil, err
	}
	compiled.Store(src, s)
	return s, nil
}

// validateJSON checks raw against the schema src; the error names every
// failing location.
func validateJSON(src string, raw json.RawMessage) error {
	s, err := compileSchema(src)
	if err != nil {
		return ora.Errorf(ora.EINTERNAL, "reason: compile schema: %v", err)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return fmt.Errorf("payload is empty")
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	if err := s.Validate(v); err != nil {
		return fmt.Errorf("%s", schemaMessage(err))
	}
	return nil
}

// schemaMessage flattens a validation error to one line: each leaf cause as
// "at /path: message".
func schemaMessage(err error) string {
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return err.Error()
	}
	var leaves []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			leaves = append(leaves, fmt.Sprintf("at %s: %s", loc, e.ErrorKind.LocalizedString(printer)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return "does not match the schema: " + strings.Join(leaves, "; ")
}

// payloadSchema returns the schema text of a program's decision payload.
func payloadSchema(id ora.ProgramID) string { return programs[id].schema }
