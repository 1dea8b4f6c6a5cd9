package actoviq

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/actoviq/actoviq-go/internal/redact"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/transport"
	"github.com/actoviq/actoviq-go/store"
)

// modelFailed ends a drive whose model call failed after the transport's
// retries: interrupted with kind provider for a transient failure, failed
// (with what to do next) for a final one or when the run has had
// Limits.MaxProviderInterruptions in a row.
func (d *drive) modelFailed(ctx context.Context, err error) (*RunResult, error) {
	pf, transient := d.providerFailure(err)
	if !transient {
		d.cp.Error = finalModelError(err, d.agent)
		return d.end(ctx, store.RunFailed, EvRunFailed)
	}
	d.cp.ProviderFailures++
	pf.Consecutive = d.cp.ProviderFailures
	if d.cp.ProviderFailures > d.limits.MaxProviderInterruptions {
		d.cp.Error = &RunError{Code: CodeProviderUnavailable, Message: fmt.Sprintf(
			"the model call failed %d times in a row, past the agent's limit of %d provider interruptions in a row; last error: %s",
			d.cp.ProviderFailures, d.limits.MaxProviderInterruptions, pf.Error),
			Hint: "the run is over; what it committed stays recorded. Start a new run when the provider is healthy"}
		return d.end(ctx, store.RunFailed, EvRunFailed)
	}
	reason := "the model call failed after the transport's retries; nothing committed is lost. Resuming the run makes one new model call from the last checkpoint"
	if len(pf.Partial) > 0 {
		reason = "the model's stream broke after it delivered output; the partial response is kept as evidence only. Resuming the run asks the model for a fresh response"
	}
	d.cp.Interruptions = []Interruption{{Kind: InterruptProvider, Reason: reason, Provider: pf}}
	return d.end(ctx, store.RunInterrupted, EvRunInterrupted)
}

// providerFailure reads the evidence out of a model-call error and says
// whether the failure is transient.
func (d *drive) providerFailure(err error) (*ProviderFailure, bool) {
	pf := &ProviderFailure{Provider: d.agent.Provider.Name(), Model: d.agent.Model, Turn: d.cp.Turn + 1,
		Attempts: d.modelAttempts + 1, Error: redact.Credentials(err.Error()), At: d.rt.clock()}
	var se *transport.StatusError
	var te *transport.TransportError
	switch {
	case errors.As(err, &se):
		pf.Attempts, pf.Status = se.Attempts, se.Status
		if se.Cause != nil && (errors.Is(se.Cause, transport.ErrRetryWaitTooLong) || errors.Is(se.Cause, transport.ErrRetryPastDeadline)) {
			pf.RetryAfter = se.Wait
		} else if w, ok := retryAfterHeader(se.Header); ok {
			pf.RetryAfter = w
		}
	case errors.As(err, &te):
		pf.Attempts, pf.Code = te.Attempts, "transport"
	}
	transient := false
	var pe *llm.ProviderError
	var si *llm.StreamInterruptedError
	if errors.As(err, &pe) {
		if pe.Status != 0 {
			pf.Status = pe.Status
		}
		if pe.Code != "" {
			pf.Code = pe.Code
		} else if pe.Type != "" {
			pf.Code = pe.Type
		}
		if pe.RequestID != "" {
			pf.RequestID = pe.RequestID
		}
		if pe.RetryAfter > 0 {
			pf.RetryAfter = pe.RetryAfter
		}
	}
	if errors.As(err, &si) {
		pf.Code = "stream_interrupted"
		if si.Partial != nil {
			// A stream can break inside an item (half a tool call's
			// arguments): evidence keeps every item in a form that persists.
			pf.Partial = d.evidence(si.Partial.Items)
		}
	}
	// The classes docs/design.md#model-calls names, by what was seen rather than by the
	// transport's retry verdict alone: a final 429 (no quota) or a 5xx the
	// server said not to retry still interrupts, since an operator can fix
	// it and resume; a failure without a response (refused connection, DNS,
	// TLS, timeout) interrupts too, since the endpoint may come back or be
	// replaced (a new base URL on resume).
	switch {
	case pe != nil && pe.Status != 0:
		transient = pe.Retryable || retryableStatus(pe.Status)
	case se != nil:
		transient = se.Retryable || retryableStatus(se.Status)
	case si != nil, te != nil:
		transient = true
	case pe != nil:
		transient = pe.Retryable || errors.Is(err, context.DeadlineExceeded)
	default:
		transient = errors.Is(err, context.DeadlineExceeded) // the model call's own timeout
	}
	if transient && pf.Code == "transport" && errors.Is(err, context.DeadlineExceeded) {
		pf.Code = "timeout"
	}
	if transient && isFinalProviderError(pf.Status, pf.Code, pf.Error) {
		transient = false
	}
	return pf, transient
}

func retryableStatus(s int) bool {
	return s == 408 || s == 409 || s == 425 || s == 429 || (s >= 500 && s <= 599)
}

// retryAfterHeader reads retry-after-ms or Retry-After (seconds).
func retryAfterHeader(h http.Header) (time.Duration, bool) {
	if h == nil {
		return 0, false
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s > 0 {
			return time.Duration(s) * time.Second, true
		}
	}
	return 0, false
}

// isFinalProviderError reports failures that no retry can cure, whatever
// the status says (some servers send context-length errors as 5xx).
func isFinalProviderError(status int, code, msg string) bool {
	switch status {
	case 400, 401, 403, 404, 422:
		return true
	}
	return contextLengthError(code, msg) || policyRefusal(code, msg)
}

func contextLengthError(code, msg string) bool {
	m := strings.ToLower(msg)
	return code == "context_length_exceeded" || strings.Contains(m, "context length") || strings.Contains(m, "context window") ||
		strings.Contains(m, "maximum context") || strings.Contains(m, "prompt is too long")
}

func policyRefusal(code, msg string) bool {
	switch code {
	case "content_policy_violation", "content_filter", "policy_violation", "safety":
		return true
	}
	m := strings.ToLower(msg)
	return strings.Contains(m, "content policy") || strings.Contains(m, "content management policy")
}

// finalModelError is the RunError of a model call that cannot succeed by
// trying again: it says what was refused and what to do next.
func finalModelError(err error, a *AgentSpec) *RunError {
	var pe *llm.ProviderError
	if !errors.As(err, &pe) {
		return modelError(err)
	}
	text := redact.Credentials(err.Error())
	code := pe.Code
	if code == "" {
		code = pe.Type
	}
	keyVar := apiKeyVariable(pe.Provider)
	switch {
	case contextLengthError(code, pe.Message+" "+text):
		return &RunError{Code: CodeContextLength, Message: text,
			Hint: "the transcript no longer fits the model's context window: start a new run with less history, or use a model with a larger window"}
	case policyRefusal(code, pe.Message+" "+text):
		return &RunError{Code: CodePolicyRefusal, Message: text,
			Hint: "the provider refused the request under its content policy: change the input and start a new run"}
	case pe.Status == 401:
		return &RunError{Code: CodeAuth, Message: text,
			Hint: fmt.Sprintf("the provider refused the credentials: check %s (the API key the provider was built with)", keyVar)}
	case pe.Status == 403:
		return &RunError{Code: CodePermission, Message: text,
			Hint: fmt.Sprintf("the API key may not use model %q: check the key's permissions (%s) and the model name", a.Model, keyVar)}
	case pe.Status == 404:
		return &RunError{Code: CodeModelNotFound, Message: text,
			Hint: fmt.Sprintf("the provider does not know model %q at this endpoint: check the model name and the base URL", a.Model)}
	case pe.Status == 400 || pe.Status == 422:
		return &RunError{Code: CodeBadRequest, Message: text,
			Hint: fmt.Sprintf("the provider rejected the request as invalid: check that model %q supports what the agent uses (tools, structured output, images)", a.Model)}
	}
	return &RunError{Code: CodeProviderError, Message: text}
}

// apiKeyVariable names the environment variable the bundled adapters read
// their key from.
func apiKeyVariable(provider string) string {
	switch {
	case strings.HasPrefix(provider, "anthropic"):
		return "ANTHROPIC_API_KEY"
	case strings.HasPrefix(provider, "openai"):
		return "OPENAI_API_KEY"
	}
	return "the provider's API key"
}
