// Package redact removes secrets from what the runtime persists and emits:
// tool arguments and results, checkpoints, ledger entries, run events, MCP
// server env and headers, error messages (docs/design.md#events-and-redaction). It runs before any sink
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
//     passphrase, pwd, cookie, privatekey, privkey, credential, sessionid,
//     sessid, sessionkey, mnemonic, seedphrase, seedwords, recoveryphrase,
//     or a configured extra key (normalised the same way):
//     "client_secret", "Set-Cookie", "AWS_SECRET_ACCESS_KEY",
//     "credentials", "db_password_hash", "key_passphrase", "DB_PWD",
//     "session_id", "JSESSIONID", "mnemonic" and "seed_phrase" are secret
//     ("seed" alone, a sampling seed, is not); or
//   - split into words, it has one of the words pin, pass, otp, cvv, cvc,
//     cvv2: "pin", "card_pin", "pinCode", "db_pass", "cvv" are secret, and
//     "shipping", "mapping", "bypass" and "passed" are not; or
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
// # Secrets inside strings
//
// [Redactor.Text] cleans text that may quote a secret. It replaces
//
//   - the value of every assignment to a secret-looking key: "api_key=…",
//     "x-api-key: …", `"client_secret": "…"`, "password=…" and "Pwd=…" in
//     a connection string ("host=db user=app password=…",
//     "Server=db;Password=…;"), "--pin=…";
//   - the value after a secret command-line flag, separated by blanks:
//     "--password …", "-token …", "--api-key '…'", "--mnemonic …" (not
//     after "--password-stdin", "--token-file", "--no-password", nor when
//     the next word is another flag);
//   - every "Bearer …" or "Basic …" credential;
//   - the password of a URL's user information ("postgres://app:…@db/x",
//     "redis://:…@cache", "mongodb+srv://app:…@cluster") and of a Go MySQL
//     DSN ("app:…@tcp(db:3306)/x"); the user name and host stay;
//   - the body of a PEM private key block ("-----BEGIN RSA PRIVATE
//     KEY-----" … END, or to the end of the text when it is cut short);
//     certificates and public keys stay.
//
// [Redactor.JSON] applies Text to every string value that is not under a
// secret key (those lose the whole value), so `{"cmd": "login
// password=hunter2"}` is stored as `{"cmd": "login password=[REDACTED]"}`.
// In an array, a string after a secret flag loses its value too:
// `["login", "--password", "hunter2"]` is stored as `["login",
// "--password", "[REDACTED]"]`.
// [Redactor.JSONText] does both to a JSON document built around text, such
// as a persisted error.
//
// Substring matching errs towards redacting: "secretary" and
// "cookie_consent" are redacted too. Leaking a secret into a checkpoint is
// worse than hiding a harmless field from an operator.
//
// What this package does not find: a secret that is neither under a
// secret-looking key nor in one of the shapes above: a bare value under an
// innocent key ({"note": "hunter2"}), a header list written as {"name":
// "Authorization", "value": ...}, a password in prose ("my password is
// hunter2"), a key or card number with no name before it.
//
// # Secrets the caller knows
//
// For values the caller knows to be secret, such as the API keys it
// configured, use [Redactor.String] or [Values] once, or a [Secrets] set
// that grows as secrets are learnt (an MCP server's env, header and URL
// secrets and its OAuth tokens; a model call's API key and secret request
// headers): it also catches the forms a secret leaks in (the token of
// "Bearer <token>", JSON- and URL-escaped). [KeyValues] and [URLValues]
// pick the values of a configuration worth holding, by the same key rules. What the runtime applies it to, and what it does not
// (a user's own message text, the model's text, a successful tool result's
// text), is listed in docs/data-hygiene.md.
package redact
