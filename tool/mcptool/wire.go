package mcptool

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK (v1.8.0) decodes a tools/call answer into a CallToolResult and
// drops what it does not know, such as the task handle of the Tasks
// extension (resultType "task", taskId), and it has no way to send a
// method it does not know (tasks/get, tasks/cancel). This file is the small
// wire layer under it that does both:
//
//   - a capture, registered per call by idempotency key, that keeps the raw
//     JSON of the call's answer. On stdio (and any other non-HTTP
//     transport) a wrapper of the connection sees every message; on
//     streamable HTTP the round tripper tees the response body of the POST
//     that carried the call (the SDK's HTTP connection cannot be wrapped
//     without losing its session updates).
//   - raw requests: on a wrapped connection, a request with an id of our own
//     ("actoviq-N") whose answer the wrapper takes out of the stream before
//     the SDK sees it; on streamable HTTP, one POST of our own.
//
// Neither ever re-sends anything.

// capture keeps the raw answer of one tools/call.
type capture struct {
	key string

	mu  sync.Mutex
	id  json.RawMessage // the JSON-RPC id of the call's request, once seen
	raw json.RawMessage // the result object of its answer
	buf bytes.Buffer    // HTTP: the bytes of the response bodies, parsed later
}

// maxCapture bounds what an HTTP capture keeps of a response stream.
const maxCapture = 16 << 20

func (c *capture) setID(id json.RawMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.id == nil {
		c.id = id
	}
}

func (c *capture) setRaw(raw json.RawMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.raw = append(json.RawMessage(nil), raw...)
}

func (c *capture) write(p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.buf.Len()+len(p) <= maxCapture {
		c.buf.Write(p)
	}
}

// result returns the raw result object of the call's answer, or nil when
// none was seen.
func (c *capture) result() json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.raw != nil || c.id == nil || c.buf.Len() == 0 {
		return c.raw
	}
	// HTTP: the body is one JSON-RPC message, or an SSE stream of them.
	body := c.buf.Bytes()
	for _, m := range splitMessages(body) {
		var resp struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(m, &resp) == nil && resp.Result != nil && sameID(resp.ID, c.id) {
			c.raw = resp.Result
			break
		}
	}
	return c.raw
}

// splitMessages returns the JSON messages of a response body: the body
// itself when it is JSON, else the data of each SSE event.
func splitMessages(body []byte) [][]byte {
	t := bytes.TrimSpace(body)
	if len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		if t[0] == '[' {
			var batch []json.RawMessage
			if json.Unmarshal(t, &batch) == nil {
				out := make([][]byte, len(batch))
				for i, b := range batch {
					out[i] = b
				}
				return out
			}
		}
		return [][]byte{t}
	}
	var out [][]byte
	var data []byte
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), maxCapture)
	flush := func() {
		if len(data) > 0 {
			out = append(out, data)
		}
		data = nil
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			flush()
		case strings.HasPrefix(line, "data:"):
			v := strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, v...)
		}
	}
	flush()
	return out
}

func sameID(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return fmt.Sprint(x) == fmt.Sprint(y) && fmt.Sprintf("%T", x) == fmt.Sprintf("%T", y)
}

// captures is a server's registry of captures by idempotency key.
type captures struct {
	mu sync.Mutex
	m  map[string]*capture
}

func (cs *captures) add(key string) (*capture, func()) {
	c := &capture{key: key}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.m == nil {
		cs.m = map[string]*capture{}
	}
	cs.m[key] = c
	return c, func() {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		if cs.m[key] == c {
			delete(cs.m, key)
		}
	}
}

func (cs *captures) get(key string) *capture {
	if key == "" {
		return nil
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.m[key]
}

// callKey returns the idempotency key in the _meta of a tools/call's
// params, or "".
func callKey(params json.RawMessage) string {
	var p struct {
		Meta map[string]any `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return ""
	}
	k, _ := p.Meta[MetaIdempotencyKey].(string)
	return k
}

// tapTransport wraps a non-HTTP transport's connection in a [tapConn].
type tapTransport struct {
	inner mcp.Transport
	sv    *server
	conn  *tapConn // set by Connect
}

func (t *tapTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	t.conn = &tapConn{Connection: c, sv: t.sv, calls: map[string]*capture{}, waiters: map[string]chan *jsonrpc.Response{}, closed: make(chan struct{})}
	return t.conn, nil
}

// tapConn sees every message of a connection: it fills the captures of
// tools/call answers and routes the answers to its own requests.
type tapConn struct {
	mcp.Connection
	sv *server

	mu      sync.Mutex
	calls   map[string]*capture               // JSON-RPC id (as text) of a tools/call → its capture
	waiters map[string]chan *jsonrpc.Response // own request ids
	seq     atomic.Int64
	closed  chan struct{}
	once    sync.Once
}

func idText(id jsonrpc.ID) string { return fmt.Sprintf("%T:%v", id.Raw(), id.Raw()) }

func (c *tapConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/call" && req.IsCall() {
		if cp := c.sv.captures.get(callKey(req.Params)); cp != nil {
			c.mu.Lock()
			c.calls[idText(req.ID)] = cp
			c.mu.Unlock()
		}
	}
	return c.Connection.Write(ctx, msg)
}

func (c *tapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			c.shut()
			return nil, err
		}
		resp, ok := msg.(*jsonrpc.Response)
		if !ok {
			return msg, nil
		}
		k := idText(resp.ID)
		c.mu.Lock()
		w, own := c.waiters[k]
		delete(c.waiters, k)
		cp := c.calls[k]
		delete(c.calls, k)
		c.mu.Unlock()
		if own {
			w <- resp
			continue
		}
		if cp != nil && resp.Result != nil {
			cp.setRaw(resp.Result)
		}
		return msg, nil
	}
}

func (c *tapConn) Close() error {
	c.shut()
	return c.Connection.Close()
}

func (c *tapConn) shut() { c.once.Do(func() { close(c.closed) }) }

// request sends one request of our own and waits for its answer. It never
// re-sends: a failure after the write is the caller's to classify.
func (c *tapConn) request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	b, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	id, err := jsonrpc.MakeID(fmt.Sprintf("actoviq-%d", c.seq.Add(1)))
	if err != nil {
		return nil, err
	}
	ch := make(chan *jsonrpc.Response, 1)
	k := idText(id)
	c.mu.Lock()
	c.waiters[k] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.waiters, k)
		c.mu.Unlock()
	}()
	if err := c.Connection.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: b}); err != nil {
		return nil, err
	}
	select {
	case resp := <-ch:
		if resp.Error != nil {
			return nil, resp.Error
		}
		return resp.Result, nil
	case <-c.closed:
		return nil, mcp.ErrConnectionClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// teeBody copies what the SDK reads of a response body into a capture.
type teeBody struct {
	io.ReadCloser
	cp *capture
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.cp.write(p[:n])
	}
	return n, err
}

// captureHTTP is called by the round tripper for each POST: when its body
// is a tools/call with a registered capture, the capture learns the call's
// id and the response body is teed into it.
func (sv *server) captureHTTP(req *http.Request, resp *http.Response) {
	if resp == nil || req.GetBody == nil {
		return
	}
	rc, err := req.GetBody()
	if err != nil {
		return
	}
	body, err := io.ReadAll(io.LimitReader(rc, 1<<20))
	rc.Close()
	if err != nil {
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method != "tools/call" || msg.ID == nil {
		return
	}
	cp := sv.captures.get(callKey(msg.Params))
	if cp == nil {
		return
	}
	cp.setID(msg.ID)
	resp.Body = &teeBody{ReadCloser: resp.Body, cp: cp}
}

// rawRequest sends one request the SDK has no method for (tasks/get,
// tasks/cancel) on sess and returns its result object. It is sent once.
func (sv *server) rawRequest(ctx context.Context, sess *session, method string, params map[string]any) (json.RawMessage, error) {
	version := sess.version()
	if version >= protocol20260728 {
		params["_meta"] = sv.requestMeta(version)
	}
	if sess.tap != nil {
		return sess.tap.request(ctx, method, params)
	}
	if sv.cfg.URL == "" {
		return nil, fmt.Errorf("this connection cannot carry %s", method)
	}
	return sv.httpRequest(ctx, sess, method, params)
}

// requestMeta is the per-request _meta of protocol 2026-07-28 (SEP-2575)
// for requests this package sends itself.
func (sv *server) requestMeta(version string) map[string]any {
	caps := map[string]any{}
	if !sv.src.opts.NoTasks {
		caps["extensions"] = map[string]any{TasksExtension: map[string]any{}}
	}
	if sv.src.opts.Elicit != nil {
		caps["elicitation"] = map[string]any{"form": map[string]any{}}
	}
	return map[string]any{
		mcp.MetaKeyProtocolVersion:    version,
		mcp.MetaKeyClientInfo:         map[string]any{"name": sv.src.opts.ClientName, "version": sv.src.opts.ClientVersion},
		mcp.MetaKeyClientCapabilities: caps,
	}
}

var httpSeq atomic.Int64

// httpRequest POSTs one JSON-RPC request to a streamable-HTTP server, with
// the configured headers, the session's id and a current OAuth token, and
// reads its answer from a JSON or SSE response.
func (sv *server) httpRequest(ctx context.Context, sess *session, method string, params map[string]any) (json.RawMessage, error) {
	id := fmt.Sprintf("actoviq-%d", httpSeq.Add(1))
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sv.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", sess.version())
	if sid := sess.cs.ID(); sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	if sv.auth != nil {
		if ts, err := sv.auth.TokenSource(ctx); err == nil && ts != nil {
			if tok, err := ts.Token(); err == nil && tok != nil {
				req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
			}
		}
	}
	base := sv.src.opts.HTTPClient
	hc := *base
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	hc.Transport = &headerTransport{base: rt, headers: sv.headers}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxCapture))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(raw[:min(len(raw), 200)])))
	}
	want, _ := json.Marshal(id)
	for _, m := range splitMessages(raw) {
		var r struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int64           `json:"code"`
				Message string          `json:"message"`
				Data    json.RawMessage `json:"data"`
			} `json:"error"`
		}
		if json.Unmarshal(m, &r) != nil || !sameID(r.ID, want) {
			continue
		}
		if r.Error != nil {
			return nil, &jsonrpc.Error{Code: r.Error.Code, Message: r.Error.Message, Data: r.Error.Data}
		}
		return r.Result, nil
	}
	return nil, errors.New("the response held no answer to the request")
}
