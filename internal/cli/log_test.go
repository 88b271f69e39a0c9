package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// The daemon's JSON log gives durations as the JSON output does: seconds,
// the unit in the key (retry_in_seconds: 0.2), never slog's nanoseconds;
// the text log keeps Go's words (retry_in=200ms).
func TestLogDurationsInSeconds(t *testing.T) {
	for _, tc := range []struct {
		format string
		check  func(t *testing.T, line string)
	}{
		{"json", func(t *testing.T, line string) {
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("not JSON: %v: %s", err, line)
			}
			if got, ok := rec["retry_in_seconds"].(float64); !ok || got != 0.2 {
				t.Errorf("retry_in_seconds = %v (%T), want 0.2: %s", rec["retry_in_seconds"], rec["retry_in_seconds"], line)
			}
			if got, ok := rec["took_seconds"].(float64); !ok || got != 90 {
				t.Errorf("took_seconds = %v, want 90: %s", rec["took_seconds"], line)
			}
			if _, ok := rec["retry_in"]; ok {
				t.Errorf("retry_in given too: %s", line)
			}
		}},
		{"text", func(t *testing.T, line string) {
			if !strings.Contains(line, "retry_in=200ms") || !strings.Contains(line, "took=1m30s") {
				t.Errorf("text log: %s", line)
			}
		}},
	} {
		t.Run(tc.format, func(t *testing.T) {
			var out bytes.Buffer
			env := &Env{Stdout: &out, Stderr: &out, Getenv: func(string) string { return "" }}
			log, err := newLogger(env, "info", tc.format)
			if err != nil {
				t.Fatal(err)
			}
			log.Info("change failed", "retry_in", 200*time.Millisecond, "took", 90*time.Second)
			tc.check(t, strings.TrimSpace(out.String()))
		})
	}
}
