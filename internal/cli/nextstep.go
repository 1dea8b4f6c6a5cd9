package cli

import (
	"context"
	"fmt"

	actoviq "github.com/actoviq/actoviq-go"
)

// startedByCLI reports whether the actoviq command started the run, so
// that actoviq resume can rebuild its agent from the settings it remembers.
func startedByCLI(info *actoviq.RunInfo) bool {
	_, err := configFromMeta(info.ID, info.Meta)
	return err == nil
}

// continueLine says how a run that waits is continued, offering only what
// works for it: actoviq resume for a run this command started; the
// workers' queue (resume --detach) when a worker serves its agent; and for
// a run a Go program started that no worker serves, that its program
// resumes it (actoviq resume cannot rebuild an agent written in Go).
func continueLine(info *actoviq.RunInfo, flags string, served bool) string {
	id := shellQuote(info.ID)
	switch {
	case startedByCLI(info) && served:
		return fmt.Sprintf("continue with: actoviq resume %s%s (or hand it to the workers: actoviq resume %s --detach%s)", id, flags, id, flags)
	case startedByCLI(info):
		return fmt.Sprintf("continue with: actoviq resume %s%s", id, flags)
	case served:
		return fmt.Sprintf("continue with: actoviq resume %s --detach%s (a worker serving agent %s takes it up)", id, flags, info.AgentID)
	}
	return fmt.Sprintf("run %s was started by a Go program with agent %s, and no worker serving that agent is running: the program that owns the agent continues it (Runtime.Resume); actoviq resume cannot rebuild an agent written in Go",
		info.ID, info.AgentID)
}

// served reports whether a live worker serves the run's agent, so that
// handing the run to the queue gets it driven. A store that cannot say
// counts as no.
func served(ctx context.Context, rt *actoviq.Runtime, info *actoviq.RunInfo) bool {
	c, err := rt.AgentServed(ctx, info.AgentID)
	return err == nil && c != nil
}
