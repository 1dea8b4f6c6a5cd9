package actoviq_test

import (
	"context"
	"strings"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store/storemem"
)

// A LeaseTTL of 1ns used to panic in time.NewTicker on the first drive.
// Every duration and limit is checked, and the error names the field.
func TestConfigAndLimitsValidated(t *testing.T) {
	for name, tc := range map[string]struct {
		cfg   actoviq.Config
		field string
	}{
		"lease 1ns":         {actoviq.Config{LeaseTTL: time.Nanosecond}, "Config.LeaseTTL"},
		"lease negative":    {actoviq.Config{LeaseTTL: -time.Second}, "Config.LeaseTTL"},
		"commit negative":   {actoviq.Config{CommitTimeout: -time.Second}, "Config.CommitTimeout"},
		"nil sink":          {actoviq.Config{Sinks: []actoviq.EventSink{nil}}, "Config.Sinks[0]"},
		"tenant with a NUL": {actoviq.Config{Tenant: "a\x00b"}, "Config.Tenant"},
		"tenant with a /":   {actoviq.Config{Tenant: "a/b"}, "Config.Tenant"},
		"tenant with a :":   {actoviq.Config{Tenant: "a:b"}, "Config.Tenant"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := actoviq.New(storemem.New(nil), &tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("New: %v, want an error naming %s", err, tc.field)
			}
		})
	}
	rt, err := actoviq.New(storemem.New(nil), &actoviq.Config{LeaseTTL: time.Millisecond})
	if err != nil {
		t.Fatalf("the shortest lease: %v", err)
	}
	defer rt.Close()
	for field, lim := range map[string]actoviq.Limits{
		"Limits.MaxTurns":                 {MaxTurns: -1},
		"Limits.RunTimeout":               {RunTimeout: -time.Second},
		"Limits.ModelTimeout":             {ModelTimeout: -time.Second},
		"Limits.ToolTimeout":              {ToolTimeout: -time.Second},
		"Limits.ReadParallelism":          {ReadParallelism: -1},
		"Limits.MaxProviderInterruptions": {MaxProviderInterruptions: -1},
		"Limits.MaxToolOutput":            {MaxToolOutput: -1},
		"Limits.MaxMalformedCalls":        {MaxMalformedCalls: -1},
	} {
		a := agent(scripted.New(scripted.Turn{Text: "ok"}))
		a.Limits = lim
		if _, err := rt.Run(context.Background(), a, input("hi")); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("Run with %s negative: %v, want an error naming it", field, err)
		}
	}
	// The shortest lease works for a whole run.
	res, err := rt.Run(context.Background(), agent(scripted.New(scripted.Turn{Text: "ok"})), input("hi"))
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
}
