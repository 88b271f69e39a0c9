package desired_test

import (
	"math/rand"
	"testing"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/test/confschema"
)

// TestSchemaAgreesOnGeneratedYAML: every file of the fuzzer's generator
// (every YAML device: styles, tags, anchors, quoting, odd scalars) that
// the loader accepts validates against the schema. The files the loader
// refuses are test/confschema's business.
func TestSchemaAgreesOnGeneratedYAML(t *testing.T) {
	s, err := confschema.Generated()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(1))
	n, accepted, noJSON := 20000, 0, 0
	if testing.Short() {
		n = 2000
	}
	for i := 0; i < n; i++ {
		choices := make([]byte, r.Intn(256))
		r.Read(choices)
		data := desired.GenYAML(choices)
		if desired.ParseNoDisk(data) != nil {
			continue
		}
		accepted++
		v, err := confschema.JSONValue(data)
		if err != nil {
			// A scalar tagged !!null that holds text: the loader takes
			// it for null, yaml.v3 (and an editor) for no value at all.
			noJSON++
			continue
		}
		if err := s.Validate(v); err != nil {
			t.Errorf("the loader accepts this file, the schema refuses it: %v\n%s", err, data)
		}
	}
	t.Logf("%d generated files, %d accepted by the loader, each validates but %d that have no JSON value", n, accepted, noJSON)
	if accepted < n/100 {
		t.Errorf("only %d of %d generated files are valid: the test says little", accepted, n)
	}
}
