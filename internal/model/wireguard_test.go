package model

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestSecretNeverPrints(t *testing.T) {
	var b [KeyLen]byte
	copy(b[:], "0123456789abcdef0123456789abcdef")
	s := NewSecret(b)
	p := WireGuardPeer{PresharedKey: s}
	j, err := json.Marshal(struct{ K Secret }{s})
	if err != nil {
		t.Fatal(err)
	}
	outs := []string{fmt.Sprint(s), fmt.Sprintf("%v %s %x %X %q %#v %+v %d", s, s, s, s, s, s, p, s), string(j), fmt.Sprintf("%#v", p)}
	for _, o := range outs {
		if strings.Contains(o, "0123456789") || strings.Contains(o, "MDEyMzQ1Njc4") || strings.Contains(o, "3031323334") {
			t.Errorf("secret printed: %s", o)
		}
	}
	if !strings.Contains(outs[0], SecretMarker) {
		t.Errorf("marker missing: %s", outs[0])
	}
}
