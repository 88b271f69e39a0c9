package metrics

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ContentType is the Prometheus text exposition format, version 0.0.4.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// appendText appends families in the text format: for each, a # HELP
// and a # TYPE line, then its series, a histogram as its cumulative
// _bucket series (le="+Inf" last), _sum and _count.
func appendText(b []byte, fams []*family) []byte {
	for _, f := range fams {
		d := f.desc
		b = append(b, "# HELP "...)
		b = append(b, d.name...)
		b = append(b, ' ')
		b = appendEscaped(b, d.help, false)
		b = append(b, "\n# TYPE "...)
		b = append(b, d.name...)
		b = append(b, ' ')
		b = append(b, d.typ.String()...)
		b = append(b, '\n')
		for _, s := range f.series {
			if s.hist == nil {
				b = appendSample(b, d, "", s.labels, "", s.value)
				continue
			}
			h := s.hist
			for i, le := range h.les {
				b = appendCount(b, d, "_bucket", s.labels, le, h.cumulative[i])
			}
			count := h.cumulative[len(h.cumulative)-1]
			b = appendCount(b, d, "_bucket", s.labels, "+Inf", count)
			b = appendSample(b, d, "_sum", s.labels, "", h.sum)
			b = appendCount(b, d, "_count", s.labels, "", count)
		}
	}
	return b
}

// appendSample appends a line with a float value; le, when not empty, is
// a last label (a histogram bucket's bound).
func appendSample(b []byte, d *Desc, suffix string, values []string, le string, v float64) []byte {
	b = appendName(b, d, suffix, values, le)
	b = appendFloat(b, v)
	return append(b, '\n')
}

// appendCount appends a line with an integer value: the count of a
// histogram or of one of its buckets, written as an integer as
// client_golang writes it.
func appendCount(b []byte, d *Desc, suffix string, values []string, le string, n uint64) []byte {
	b = appendName(b, d, suffix, values, le)
	b = strconv.AppendUint(b, n, 10)
	return append(b, '\n')
}

// appendName appends the series' name and labels, and the space before
// its value. values are in d.order.
func appendName(b []byte, d *Desc, suffix string, values []string, le string) []byte {
	b = append(b, d.name...)
	b = append(b, suffix...)
	if len(values) > 0 || le != "" {
		b = append(b, '{')
		for i, v := range values {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, d.labels[d.order[i]]...)
			b = append(b, `="`...)
			b = appendEscaped(b, v, true)
			b = append(b, '"')
		}
		if le != "" {
			if len(values) > 0 {
				b = append(b, ',')
			}
			b = append(b, `le="`...)
			b = append(b, le...)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	return append(b, ' ')
}

// appendEscaped appends s with backslash and line feed escaped, and, in a
// label value, the double quote; bytes that are not UTF-8 become U+FFFD,
// since a parser refuses a label value that is not UTF-8.
func appendEscaped(b []byte, s string, quote bool) []byte {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quote:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

// appendFloat writes v as Prometheus does: the shortest decimal that
// reads back as v ('g' style, so 1e+06 and 0.001), 0 for both zeros, NaN,
// +Inf and -Inf.
func appendFloat(b []byte, v float64) []byte {
	switch {
	case v == 0:
		return append(b, '0')
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case math.IsInf(v, +1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}
