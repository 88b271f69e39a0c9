// Package confschema holds the configuration's JSON Schema for tests: the
// one the loader's types make (desired.JSONSchema) and the committed one
// (docs/schema/config.json), and a YAML file as an editor's YAML language
// server gives it to a schema: its JSON value.
package confschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/netreconcile/netreconcile/internal/desired"
)

// Generated compiles the schema the loader's types make now.
func Generated() (*jsonschema.Schema, error) {
	// Through JSON, as the committed file is: the compiler takes JSON
	// values (float64 or json.Number, not Go's integer types).
	data, err := json.Marshal(desired.JSONSchema(func(string) string { return "" }))
	if err != nil {
		return nil, err
	}
	return compile(data)
}

// Committed compiles the schema file at path (docs/schema/config.json).
func Committed(path string) (*jsonschema.Schema, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return compile(data)
}

func compile(data []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("read the schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("config.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("config.json")
}

// Validate holds a YAML file to the schema. A file that is not YAML, or
// holds more than one document, is an error like any refusal.
func Validate(s *jsonschema.Schema, data []byte) error {
	v, err := JSONValue(data)
	if err != nil {
		return err
	}
	return s.Validate(v)
}

// JSONValue is the value of the YAML document data as JSON has it:
// mappings with string keys, lists, strings, numbers, booleans, null. A
// YAML timestamp is its text, and so is a float JSON has no number for
// (.nan, .inf).
func JSONValue(data []byte) (any, error) {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return jsonOf(v)
}

func jsonOf(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			j, err := jsonOf(e)
			if err != nil {
				return nil, err
			}
			out[k] = j
		}
		return out, nil
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			j, err := jsonOf(e)
			if err != nil {
				return nil, err
			}
			out[fmt.Sprint(k)] = j
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			j, err := jsonOf(e)
			if err != nil {
				return nil, err
			}
			out[i] = j
		}
		return out, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Sprint(x), nil
		}
		return x, nil
	case time.Time:
		return x.Format(time.RFC3339Nano), nil
	case nil, bool, string, int, int64, uint64:
		return x, nil
	}
	return nil, errors.New("confschema: a YAML value of type " + fmt.Sprintf("%T", v) + " has no JSON form")
}
