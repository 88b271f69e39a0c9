package rtnl_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
)

// ip -j writes objects with repeated keys (a route's "dst" and its
// encapsulation's "dst"), which a map loses: ipObject keeps them all, in
// order.
type ipObject []ipField

type ipField struct {
	key string
	val any // string, json.Number, bool, nil, ipObject or []any
}

// parseIPJSON reads the array of objects ip -j prints.
func parseIPJSON(t *testing.T, out string) []ipObject {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader([]byte(out)))
	d.UseNumber()
	v, err := ipValue(d)
	if err != nil {
		t.Fatalf("ip -j output: %v\n%s", err, out)
	}
	arr, ok := v.([]any)
	if !ok {
		t.Fatalf("ip -j output is not an array: %s", out)
	}
	objs := make([]ipObject, 0, len(arr))
	for _, e := range arr {
		o, ok := e.(ipObject)
		if !ok {
			t.Fatalf("ip -j output: %v is not an object", e)
		}
		objs = append(objs, o)
	}
	return objs
}

func ipValue(d *json.Decoder) (any, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		var o ipObject
		for d.More() {
			k, err := d.Token()
			if err != nil {
				return nil, err
			}
			v, err := ipValue(d)
			if err != nil {
				return nil, err
			}
			o = append(o, ipField{k.(string), v})
		}
		_, err := d.Token()
		return o, err
	case json.Delim('['):
		arr := []any{}
		for d.More() {
			v, err := ipValue(d)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		_, err := d.Token()
		return arr, err
	}
	return tok, nil
}

// get is the first value of key, nil when absent.
func (o ipObject) get(key string) any {
	for _, f := range o {
		if f.key == key {
			return f.val
		}
	}
	return nil
}

func (o ipObject) has(key string) bool {
	for _, f := range o {
		if f.key == key {
			return true
		}
	}
	return false
}

// str is a value as text: a string, a number's digits, "" when absent.
func (o ipObject) str(key string) string { return text(o.get(key)) }

func text(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case json.Number:
		return v.String()
	}
	return fmt.Sprint(v)
}

// num is a number or a numeric string (ip -N), 0 when absent; base 0
// reads "0x10".
func (o ipObject) num(t *testing.T, key string) uint64 {
	t.Helper()
	s := o.str(key)
	if s == "" {
		return 0
	}
	n, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		t.Fatalf("%s: %q is not a number", key, s)
	}
	return n
}

// list is an array's elements as objects.
func (o ipObject) list(key string) []ipObject {
	arr, _ := o.get(key).([]any)
	var out []ipObject
	for _, e := range arr {
		if eo, ok := e.(ipObject); ok {
			out = append(out, eo)
		}
	}
	return out
}

// strings is an array's elements as text.
func (o ipObject) strings(key string) []string {
	arr, _ := o.get(key).([]any)
	var out []string
	for _, e := range arr {
		out = append(out, text(e))
	}
	return out
}
