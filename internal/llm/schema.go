package llm

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	openai "github.com/sashabaranov/go-openai"
	"github.com/sashabaranov/go-openai/jsonschema"
)

// Schema is the JSON shape an answer must take.
type Schema struct {
	// Name identifies the schema to the server (letters, digits, _ and -).
	Name string
	// Definition is the JSON Schema.
	Definition *jsonschema.Definition
}

// SchemaFor derives a Schema from the Go type T: fields without omitempty
// are required, `enum:"a,b"` and `description:"..."` tags are honoured.
func SchemaFor[T any](name string) (*Schema, error) {
	var zero T
	def, err := jsonschema.GenerateSchemaForType(zero)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", name, err)
	}
	if len(def.Defs) == 0 {
		def.Defs = nil
	}
	return &Schema{Name: name, Definition: def}, nil
}

func (s *Schema) responseFormat() *openai.ChatCompletionResponseFormat {
	return &openai.ChatCompletionResponseFormat{
		Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
		JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{
			Name:   s.Name,
			Schema: s.Definition,
		},
	}
}

// Validate checks a decoded JSON value against the schema and names the
// first offending path.
func (s *Schema) Validate(v any) error {
	return validateValue(*s.Definition, v, "$", s.Definition.Defs)
}

func validateValue(d jsonschema.Definition, v any, path string, defs map[string]jsonschema.Definition) error {
	if d.Ref != "" {
		ref, ok := defs[strings.TrimPrefix(d.Ref, "#/$defs/")]
		if !ok {
			return fmt.Errorf("%s: unknown schema reference %s", path, d.Ref)
		}
		return validateValue(ref, v, path, defs)
	}
	if len(d.AnyOf) > 0 {
		var errs []string
		for _, sub := range d.AnyOf {
			err := validateValue(sub, v, path, defs)
			if err == nil {
				return nil
			}
			errs = append(errs, err.Error())
		}
		return fmt.Errorf("%s: matches none of: %s", path, strings.Join(errs, "; "))
	}
	if v == nil {
		if d.Nullable || d.Type == jsonschema.Null || d.Type == "" {
			return nil
		}
		return fmt.Errorf("%s: is null, want %s", path, d.Type)
	}
	switch d.Type {
	case jsonschema.Object:
		obj, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: is %s, want object", path, jsonKind(v))
		}
		for _, name := range d.Required {
			if _, ok := obj[name]; !ok {
				return fmt.Errorf("%s: required field %q is missing", path, name)
			}
		}
		names := make([]string, 0, len(obj))
		for name := range obj {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			prop, ok := d.Properties[name]
			if !ok {
				if d.AdditionalProperties == false {
					return fmt.Errorf("%s: unexpected field %q", path, name)
				}
				continue
			}
			if err := validateValue(prop, obj[name], path+"."+name, defs); err != nil {
				return err
			}
		}
	case jsonschema.Array:
		arr, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: is %s, want array", path, jsonKind(v))
		}
		if d.Items != nil {
			for i, item := range arr {
				if err := validateValue(*d.Items, item, fmt.Sprintf("%s[%d]", path, i), defs); err != nil {
					return err
				}
			}
		}
	case jsonschema.String:
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s: is %s, want string", path, jsonKind(v))
		}
		if len(d.Enum) > 0 && !contains(d.Enum, s) {
			return fmt.Errorf("%s: %q is not one of %s", path, s, strings.Join(d.Enum, ", "))
		}
	case jsonschema.Number:
		if _, ok := v.(float64); !ok {
			return fmt.Errorf("%s: is %s, want number", path, jsonKind(v))
		}
	case jsonschema.Integer:
		f, ok := v.(float64)
		if !ok || f != float64(int64(f)) {
			return fmt.Errorf("%s: is %s, want integer", path, jsonKind(v))
		}
	case jsonschema.Boolean:
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: is %s, want boolean", path, jsonKind(v))
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func jsonKind(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64:
		if x == float64(int64(x)) {
			return "integer"
		}
		return "number"
	case json.Number:
		return "number"
	}
	return fmt.Sprintf("%T", v)
}
