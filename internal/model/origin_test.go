package model

import "testing"

func TestOriginRendersAsPos(t *testing.T) {
	f, g := "/etc/netreconcile/netreconcile.yaml", "/etc/netreconcile/netreconcile.yaml"
	for _, c := range []struct {
		o    Origin
		want string
	}{
		{Origin{}, ""},
		{OriginAt(nil, 3, 4), ""},
		{OriginAt(&f, 12, 5), "/etc/netreconcile/netreconcile.yaml:12:5"},
		{OriginAt(&f, 4294967295, 1), "/etc/netreconcile/netreconcile.yaml:4294967295:1"},
		{OriginAt(&f, 0, 0), "/etc/netreconcile/netreconcile.yaml"},
		{OriginText("pool p block 3"), "pool p block 3"},
		{OriginText(""), ""},
	} {
		if got := c.o.String(); got != c.want {
			t.Errorf("%#v: %q, want %q", c.o, got, c.want)
		}
		if c.o.IsZero() != (c.want == "") {
			t.Errorf("%q: IsZero %v", c.want, c.o.IsZero())
		}
	}
	// Equal compares the text: two copies of a name are one file.
	if !OriginAt(&f, 2, 3).Equal(OriginAt(&g, 2, 3)) || OriginAt(&f, 2, 3).Equal(OriginAt(&g, 2, 4)) ||
		OriginAt(&f, 2, 3).Equal(Origin{}) || !(Origin{}).Equal(OriginText("")) {
		t.Error("Equal")
	}
}
