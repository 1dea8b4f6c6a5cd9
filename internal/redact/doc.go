// Package redact removes secrets from what the runtime persists and emits:
// tool arguments and results, checkpoints, ledger entries, run events, MCP
// server env and headers, error messages (SPEC §9). It runs before any sink
// and before any store write. Approvals bind to the digest of the unredacted
// arguments, so compute digests before redacting.
//
// # Which keys are secret
//
// A key is normalised by lowercasing it and dropping every character that
// is not a letter or a digit, so "X-Api-Key", "api_key", "API KEY" and
// "api.key" all become "apikey". The normalised key is secret when
//
//   - it contains one of authorization, apikey, secret, password, passwd,
//     cookie, privatekey, credential, sessionid, sessid, sessionkey, or a
//     configured extra key (normalised the same way): "client_secret",
//     "Set-Cookie", "AWS_SECRET_ACCESS_KEY", "credentials",
//     "db_password_hash", "session_id" and "JSESSIONID" are secret; or
//   - it ends with token: "token", "access_token", "X-Auth-Token",
//     "refreshToken" are secret; or
//   - split into words (at separators and camel case), it has the word
//     token or tokens next to other words none of which is a usage word
//     (max, input, output, total, count, type, url, ...): "auth_tokens",
//     "tokenValue", "access_tokens" are secret.
//
// token is matched this carefully because in an LLM runtime it is mostly a
// unit of usage: "max_tokens", "input_tokens", "tokens_used", "tokens",
// "token_type" and "totalTokenCount" are counters or metadata the operator
// needs to see, not secrets.
//
// # Free text
//
// [Redactor.Text] cleans text that may quote a secret (error messages,
// interruption reasons, evidence): the value of every assignment to a
// secret-looking key ("api_key=…", "x-api-key: …", `"client_secret": "…"`)
// and every "Bearer …" credential is replaced. [Redactor.JSONText] applies
// both to a JSON document built around text, such as a persisted error.
//
// Substring matching errs towards redacting: "secretary" and
// "cookie_consent" are redacted too. Leaking a secret into a checkpoint is
// worse than hiding a harmless field from an operator.
//
// What this package does not find: secrets under innocent keys (a password
// inside a URL, a header list written as {"name": "Authorization", "value":
// ...}). For values the caller knows to be secret, such as the API keys it
// configured, use [Redactor.String].
package redact
