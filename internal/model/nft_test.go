package model

import (
	"testing"
	"time"
)

func TestNftTime(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                             "0s",
		time.Microsecond:              "0s",
		1500 * time.Millisecond:       "1s500ms",
		time.Hour:                     "1h",
		24 * time.Hour:                "1d",
		2073599 * time.Second:         "23d23h59m59s",
		49*24*time.Hour + time.Minute: "49d1m",
	} {
		if got := NftTime(d); got != want {
			t.Errorf("NftTime(%v) = %q, want %q", d, got, want)
		}
	}
}
