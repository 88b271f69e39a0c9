package desired

// For the external tests (package desired_test), which may import test
// support that imports this package.

// GenYAML is genYAML: a configuration file made from choice bytes.
var GenYAML = genYAML

// ParseNoDisk parses a file that reads no side file.
func ParseNoDisk(data []byte) error {
	_, err := ParseWith([]Source{{Name: "f.yaml", Data: data}}, noDisk)
	return err
}
