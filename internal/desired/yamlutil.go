package desired

import (
	"reflect"
	"regexp"
	"strconv"
)

func reflectValue(p any) reflect.Value { return reflect.ValueOf(p).Elem() }

var yamlLine = regexp.MustCompile(`line (\d+)`)

// yamlErrLine extracts the line number yaml.v3 puts in its syntax errors.
func yamlErrLine(err error) int {
	m := yamlLine.FindStringSubmatch(err.Error())
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}
