package console

import (
	"bytes"
	"encoding/json"
	"strings"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/store"
)

// The digest of a call's unredacted arguments ("args_digest": a plain
// SHA-256 of them) is what approvals bind to, so the store and the CLI
// keep it. The console never shows it: beside the redacted arguments it
// gives away a low-entropy secret among them (a PIN, a short code) to
// anyone who tries the candidates. A decision binds to what the operator
// was shown instead (shown_digest, the digest of the redacted rendering).
// The functions below take it out of everything the console sends: open
// and unsettled interruptions, the ledger's decision records and their
// evidence, the audit trail, the events' data and the resume answer.

// argsDigestKey is the JSON name of the digest of the unredacted
// arguments, wherever it appears (an interruption, a decision record, an
// event's data).
const argsDigestKey = "args_digest"

// interruptionsShown returns copies of ins without the digest of their
// unredacted arguments; nil stays nil.
func interruptionsShown(ins []actoviq.Interruption) []actoviq.Interruption {
	if ins == nil {
		return nil
	}
	out := make([]actoviq.Interruption, len(ins))
	for i, in := range ins {
		in.ArgsDigest = ""
		out[i] = in
	}
	return out
}

// decisionShown returns a copy of d without the digest of the unredacted
// arguments, in it, its evidence and its earlier (void) approvals.
func decisionShown(d *store.DecisionRecord) *store.DecisionRecord {
	if d == nil {
		return nil
	}
	c := decisionValue(*d)
	return &c
}

func decisionValue(d store.DecisionRecord) store.DecisionRecord {
	d.ArgsDigest = ""
	d.Evidence = withoutArgsDigest(d.Evidence)
	if d.Earlier != nil {
		earlier := make([]store.DecisionRecord, len(d.Earlier))
		for i, e := range d.Earlier {
			earlier[i] = decisionValue(e)
		}
		d.Earlier = earlier
	}
	return d
}

// eventsShown returns copies of evs whose data carry no digest of
// unredacted arguments (run.interrupted lists its interruptions, a
// decision event its record).
func eventsShown(evs []actoviq.Event) []actoviq.Event {
	out := make([]actoviq.Event, len(evs))
	for i, ev := range evs {
		ev.Data = withoutArgsDigest(ev.Data)
		out[i] = ev
	}
	return out
}

// withoutArgsDigest returns raw without the members named args_digest,
// at any depth, keeping everything else as it was (order and values).
// JSON that does not parse is returned as it is: it holds no such member
// that a reader could find as one.
func withoutArgsDigest(raw json.RawMessage) json.RawMessage {
	if !bytes.Contains(raw, []byte(`"`+argsDigestKey+`"`)) {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out bytes.Buffer
	if err := copyWithout(dec, &out); err != nil {
		return raw
	}
	return out.Bytes()
}

// copyWithout copies one JSON value from dec to out, leaving out the
// object members named args_digest.
func copyWithout(dec *json.Decoder, out *bytes.Buffer) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return writeToken(out, tok)
	}
	out.WriteRune(rune(d))
	first := true
	for dec.More() {
		if d == '{' {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			if k == argsDigestKey {
				var skip json.RawMessage
				if err := dec.Decode(&skip); err != nil {
					return err
				}
				continue
			}
			if !first {
				out.WriteByte(',')
			}
			if err := writeToken(out, k); err != nil {
				return err
			}
			out.WriteByte(':')
		} else if !first {
			out.WriteByte(',')
		}
		first = false
		if err := copyWithout(dec, out); err != nil {
			return err
		}
	}
	end, err := dec.Token()
	if err != nil {
		return err
	}
	out.WriteRune(rune(end.(json.Delim)))
	return nil
}

// writeToken writes a scalar token (string, json.Number, bool, nil) as
// JSON, without escaping HTML characters (the stored JSON did not).
func writeToken(out *bytes.Buffer, tok any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(tok); err != nil {
		return err
	}
	out.WriteString(strings.TrimSuffix(b.String(), "\n"))
	return nil
}
