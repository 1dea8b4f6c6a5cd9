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
//     cookie, privatekey, credential, or a configured extra key (normalised
//     the same way): "client_secret", "Set-Cookie", "AWS_SECRET_ACCESS_KEY",
//     "credentials" and "db_password_hash" are secret; or
//   - it ends with token: "token", "access_token", "X-Auth-Token",
//     "refreshToken" are secret.
//
// token is the one word matched only at the end, because in an LLM runtime
// it is mostly a unit of usage: "max_tokens", "input_tokens", "tokens_used"
// and "totalTokenCount" are counters the operator needs to see, not secrets.
// The price is that a key such as "access_tokens" or "token_value" is not
// redacted by default; pass it as an extra key.
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
