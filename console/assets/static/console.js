// actoviq console: small, plain script. The pages work as server-rendered
// HTML; this adds the decision forms, resume, the login URL's token and
// live updates. All calls go to the JSON API under /api/v1/.
"use strict";
(function () {
  var meta = document.querySelector('meta[name="csrf-token"]');
  var csrf = meta ? meta.content : "";

  function api(method, path, body) {
    var opts = { method: method, credentials: "same-origin", headers: { "Accept": "application/json" } };
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    if (method !== "GET") opts.headers["X-CSRF-Token"] = csrf;
    return fetch(path, opts).then(function (r) {
      return r.text().then(function (t) {
        var data = {};
        try { data = t ? JSON.parse(t) : {}; } catch (e) { data = { code: "bad_response", message: t }; }
        return { status: r.status, ok: r.ok, data: data };
      });
    });
  }

  function show(el, text, cls) {
    if (!el) return;
    el.textContent = text;
    el.className = el.className.replace(/\b(ok|error)\b/g, "").trim() + (cls ? " " + cls : "");
  }

  function flash(text) { try { sessionStorage.setItem("actoviq-flash", text); } catch (e) {} }
  var flashEl = document.getElementById("flash");
  try {
    var f = sessionStorage.getItem("actoviq-flash");
    // A decision's confirmation lands beside the Resume button (the next
    // step), or at the top of a page without one; the page is scrolled to
    // it rather than left where the form was before the reload.
    var target = document.getElementById("decided") || flashEl;
    if (f && target) {
      sessionStorage.removeItem("actoviq-flash");
      if ("scrollRestoration" in history) history.scrollRestoration = "manual";
      show(target, f, "ok");
      target.setAttribute("tabindex", "-1");
      target.scrollIntoView({ block: "center" });
      target.focus({ preventScroll: true });
    }
  } catch (e) {}

  // Login: a login URL carries the token in its fragment, which never
  // reaches the server or its logs; move it into the form and drop it.
  var login = document.getElementById("login-form");
  if (login && location.hash.indexOf("#token=") === 0) {
    login.querySelector("#token").value = decodeURIComponent(location.hash.slice(7));
    history.replaceState(null, "", location.pathname + location.search);
    var name = login.querySelector("#name");
    if (name) name.focus();
    else login.querySelector("#sign-in").focus(); // the token names its person
  }

  // Decision forms.
  var run = document.getElementById("run");
  var runID = run ? run.getAttribute("data-run") : "";
  document.querySelectorAll("form[data-decide]").forEach(function (form) {
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var out = form.closest("article").querySelector(".decide-result");
      var d = { call_id: form.getAttribute("data-call"), kind: form.getAttribute("data-kind") };
      // What the operator was shown, recorded with the decision.
      if (form.getAttribute("data-shown-digest")) d.shown_digest = form.getAttribute("data-shown-digest");
      if (run && run.getAttribute("data-shown-at")) d.shown_at = run.getAttribute("data-shown-at");
      ["note", "reason", "message"].forEach(function (k) {
        var f = form.elements[k];
        if (f && f.value.trim() !== "") d[k] = f.value;
      });
      if (form.elements.answer) {
        try { d.answer = JSON.parse(form.elements.answer.value); } catch (e) {
          show(out, "The answer is not valid JSON: " + e.message + '. Give an object, e.g. {"ok": true}.', "error");
          form.elements.answer.focus();
          return;
        }
      }
      if (form.elements.result) {
        // JSON is kept as it is; anything else is the text the model sees.
        var raw = form.elements.result.value;
        try { d.result = JSON.parse(raw); } catch (e) { d.result = raw.trim(); }
      }
      var button = form.querySelector("button[type=submit]");
      button.disabled = true;
      api("POST", "/api/v1/runs/" + encodeURIComponent(runID) + "/decisions", d).then(function (r) {
        button.disabled = false;
        if (r.ok) {
          flash("Recorded " + d.kind + " for call " + d.call_id + " as " + r.data.by + ". " + (r.data.next || ""));
          location.reload();
          return;
        }
        var msg = r.data.message || ("HTTP " + r.status);
        if (r.status === 409) msg = "Not recorded: " + msg;
        if (r.status === 401) msg = "Your session ended: sign in again. " + msg;
        show(out, msg, "error");
        out.focus && out.setAttribute("tabindex", "-1");
        out.focus();
      }, function (e) { button.disabled = false; show(out, "The console did not answer: " + e, "error"); });
    });
  });

  // Cancel an MCP task.
  document.querySelectorAll("form[data-cancel-task]").forEach(function (form) {
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var out = form.closest("article").querySelector(".decide-result");
      var call = form.getAttribute("data-call");
      var button = form.querySelector("button[type=submit]");
      button.disabled = true;
      api("POST", "/api/v1/runs/" + encodeURIComponent(runID) + "/calls/" + encodeURIComponent(call) + "/cancel-task", {}).then(function (r) {
        button.disabled = false;
        if (r.ok) {
          flash("tasks/cancel acknowledged for task " + r.data.task_id + "; recorded as " + r.data.by + ". " + r.data.next);
          location.reload();
          return;
        }
        show(out, r.data.message || ("HTTP " + r.status), "error");
      }, function (e) { button.disabled = false; show(out, "The console did not answer: " + e, "error"); });
    });
  });

  // Resume.
  var resume = document.getElementById("resume");
  if (resume) {
    resume.addEventListener("click", function () {
      var out = document.getElementById("resume-result");
      resume.disabled = true;
      show(out, "Resuming…", "");
      api("POST", "/api/v1/runs/" + encodeURIComponent(runID) + "/resume").then(function (r) {
        resume.disabled = false;
        if (r.status === 200 && r.data.status === "queued") {
          flash("The run was handed to the workers' queue; this page updates when a worker has driven it.");
          location.reload();
        } else if (r.status === 200) {
          flash("The run was resumed and is now " + r.data.status + ".");
          location.reload();
        } else if (r.status === 202) {
          show(out, "The run is being resumed; this page updates when it stops.", "ok");
        } else if (r.data.command) {
          show(out, r.data.message, "error");
        } else {
          show(out, r.data.message || ("HTTP " + r.status), "error");
        }
      }, function (e) { resume.disabled = false; show(out, "The console did not answer: " + e, "error"); });
    });
  }

  // Run page: reload when the run changes, unless the operator is typing.
  if (run) {
    var rev = run.getAttribute("data-revision"), status = run.getAttribute("data-status"), evn = run.getAttribute("data-events");
    setInterval(function () {
      if (document.hidden) return;
      api("GET", "/api/v1/runs/" + encodeURIComponent(runID)).then(function (r) {
        if (!r.ok) return;
        // The run's JSON leaves zero values out (a revision of 0, no events).
        if (String(r.data.revision || 0) === rev && r.data.status === status && String((r.data.events || []).length) === evn) return;
        var busy = Array.prototype.some.call(document.querySelectorAll("form[data-decide] input, form[data-decide] textarea"), function (f) {
          return f.type === "checkbox" ? f.checked : f.value !== "";
        });
        if (busy) {
          show(flashEl, "This run changed (now " + r.data.status + "). Reload to see it; your unsent input would be lost.", "error");
        } else {
          location.reload();
        }
      });
    }, 2000);
  }

  // Inbox: live updates over server-sent events, with ages kept current.
  var inbox = document.getElementById("inbox");
  function age(since) {
    var s = Math.max(0, Math.floor((Date.now() - Date.parse(since)) / 1000));
    if (s < 60) return s + "s";
    if (s < 3600) return Math.floor(s / 60) + "m";
    if (s < 172800) { var m = Math.floor(s / 60) % 60; return Math.floor(s / 3600) + "h" + (m < 10 ? "0" : "") + m + "m"; }
    return Math.floor(s / 86400) + "d";
  }
  function el(tag, cls, text) { var e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; }
  function renderInbox(data) {
    var tot = document.getElementById("inbox-totals");
    if (tot && data.totals) {
      tot.textContent = data.total + " runs wait" + Object.keys(data.totals).sort().map(function (k) {
        return " · " + k + " " + data.totals[k];
      }).join("");
    }
    var cut = document.getElementById("inbox-cut-text");
    if (cut) cut.textContent = data.cut ? data.cut + "." : "";
    inbox.textContent = "";
    if (!data.items.length) { inbox.appendChild(el("li", "empty", "Nothing waits for a person.")); return; }
    data.items.forEach(function (it) {
      var li = el("li", "item kind-" + it.kind);
      var a = el("a");
      a.href = "/runs/" + encodeURIComponent(it.run_id) + (it.call_id ? "#call-" + encodeURIComponent(it.call_id) : "");
      a.appendChild(el("span", "badge", it.kind));
      var ag = el("span", "age", age(it.since)); ag.setAttribute("data-since", it.since); a.appendChild(ag);
      var what = el("span", "what");
      if (it.tool) what.appendChild(el("b", "", it.tool));
      if (it.effect) { what.appendChild(document.createTextNode(" ")); what.appendChild(el("span", "effect", it.effect)); }
      what.appendChild(document.createTextNode((it.tool ? " · " : "") + "run "));
      what.appendChild(el("code", "", it.run_id));
      what.appendChild(document.createTextNode(" · " + it.agent_id));
      a.appendChild(what);
      if (it.summary) { var sm = el("span", "summary"); sm.appendChild(el("code", "", it.summary)); a.appendChild(sm); }
      var ap = it.approval;
      if (ap && (ap.required > 1 || ap.escalated_at)) {
        var line = el("span", "approval-line");
        if (ap.required > 1) {
          var who = ap.approvers && ap.approvers.length ? " (" + ap.approvers.join(", ") + ")" : "";
          line.appendChild(document.createTextNode((ap.approvers ? ap.approvers.length : 0) + " of " + ap.required + " approvers" + who));
        }
        if (ap.escalated_at) { line.appendChild(document.createTextNode(" ")); line.appendChild(el("span", "badge escalated", "escalated")); }
        a.appendChild(line);
      }
      a.appendChild(el("span", "reason", it.reason));
      li.appendChild(a);
      inbox.appendChild(li);
    });
  }
  if (inbox) {
    var live = document.getElementById("inbox-live");
    setInterval(function () {
      inbox.querySelectorAll("[data-since]").forEach(function (s) { s.textContent = age(s.getAttribute("data-since")); });
    }, 1000);
    if (window.EventSource) {
      var es = new EventSource(inbox.getAttribute("data-stream"));
      es.addEventListener("inbox", function (m) {
        renderInbox(JSON.parse(m.data));
        live.textContent = "Live · updated " + new Date().toLocaleTimeString();
      });
      es.onerror = function () { live.textContent = "Live updates paused; retrying…"; };
    } else {
      setInterval(function () {
        api("GET", "/api/v1/inbox" + location.search).then(function (r) { if (r.ok) renderInbox(r.data); });
      }, 3000);
    }
  }
  // Everything is wired: tests (and impatient people) may act now.
  document.documentElement.setAttribute("data-ready", "1");
})();
