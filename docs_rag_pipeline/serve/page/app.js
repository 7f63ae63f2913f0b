// The chat page: POST /ask, render the answer with [n] markers linked to source cards.
// Everything that comes from the corpus or the answer is put in the page as text
// (textContent / createTextNode), never as HTML.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const form = $("ask-form");
  const question = $("question");
  const statusEl = $("status");
  const errorEl = $("error");
  const result = $("result");
  const banner = $("refused-banner");
  const warningEl = $("warning");
  const answerEl = $("answer");
  const sourcesHeading = $("sources-heading");
  const sourcesEl = $("sources");
  const traceEl = $("trace-id");
  const copyBtn = $("copy-trace");
  const authEl = $("auth");
  const tokenInput = $("token");
  const TOKEN_KEY = "docs-rag-token";
  const conversation = $("conversation");
  const turnsEl = $("turns");
  const currentQuestion = $("current-question");
  const standaloneEl = $("standalone");
  const replacedNote = $("replaced-note");
  const newThreadBtn = $("new-thread");

  let threadId = null; // the conversation the next question continues (the last answer's thread_id)
  let shown = null; // the turn on screen: {question, ans}, moved up into the conversation by the next one
  let ended = false; // the server no longer has the conversation on screen: the next turn starts a new one

  let seq = 0; // the number of the latest question; older answers are dropped
  let inflight = null; // the AbortController of the question in flight
  let cancelled = 0;
  let lastQuestion = "";

  // ---- small DOM helpers (text only) -------------------------------------------------------
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") node.textContent = String(v);
      else if (k === "className") node.className = v;
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children) {
      if (c === null || c === undefined) continue;
      node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    }
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  // only http(s) links from the corpus become clickable as they are; a local source's URL (relative,
  // e.g. "docs/refresh.md#x", or file:///…) opens the indexed page on this server: view?url=…#x, relative
  // to the page like every URL of the page (the API may sit under a proxy's path prefix, /rag/)
  // (with the citation's or chunk's source, since two sources may index the same URL)
  function safeHref(url, source) {
    const s = String(url);
    const local = /^file:/i.test(s) || (!/^[a-z][a-z0-9+.-]*:/i.test(s) && !s.startsWith("//"));
    if (local) {
      const i = s.indexOf("#");
      const page = i < 0 ? s : s.slice(0, i);
      const from = typeof source === "string" && source ? "&source=" + encodeURIComponent(source) : "";
      return page ? "view?url=" + encodeURIComponent(page) + from + (i < 0 ? "" : s.slice(i)) : null;
    }
    try {
      const u = new URL(s);
      return u.protocol === "http:" || u.protocol === "https:" ? u.href : null;
    } catch (e) {
      return null;
    }
  }

  function authHeaders() {
    const t = sessionStorage.getItem(TOKEN_KEY);
    return t && !BAD_TOKEN.test(t) ? { Authorization: "Bearer " + headerToken(t) } : {};
  }

  // The token as the server compares it: the header's bytes against the token's UTF-8 (http.md). A
  // header value is a string of bytes: fetch sent "ä" as the Latin-1 byte e4 (a 401) and refused "€"
  // (above U+00FF) with a TypeError, so each UTF-8 byte goes as the character of that code point.
  function headerToken(t) {
    return String.fromCharCode(...new TextEncoder().encode(t));
  }

  // what no header can carry: a control character (NUL, a line break…); a tab is allowed
  const BAD_TOKEN = /[\u0000-\u0008\u000a-\u001f\u007f]/;

  // what an error body says, whatever its shape: this server's {"error": {"code", "message"}}, a
  // gateway's {"error": "Bad gateway"}, or nothing usable ("HTTP 502")
  function errorMessage(body, status) {
    const err = body && typeof body === "object" ? body.error : null;
    if (err && typeof err === "object" && typeof err.message === "string" && err.message.trim()) return err.message;
    if (typeof err === "string" && err.trim()) return err;
    return "HTTP " + status;
  }

  function showError(message) {
    errorEl.textContent = message;
    errorEl.hidden = false;
  }

  function setBusy(busy) {
    form.classList.toggle("busy", busy);
    result.setAttribute("aria-busy", busy ? "true" : "false");
    statusEl.textContent = busy ? "Searching the docs…" : "";
  }

  // ---- asking ------------------------------------------------------------------------------
  async function ask(text) {
    if (inflight) {
      inflight.abort(); // a new question cancels the one in flight
      cancelled += 1;
      form.dataset.cancelled = String(cancelled);
    }
    const controller = new AbortController();
    inflight = controller;
    const mine = ++seq;
    lastQuestion = text;
    errorEl.hidden = true;
    setBusy(true);
    const payload = { question: text, stream: true };
    if (threadId) payload.thread_id = threadId;
    try {
      const resp = await fetch("ask", {
        method: "POST",
        headers: { "Content-Type": "application/json", ...authHeaders() },
        body: JSON.stringify(payload),
        signal: controller.signal,
      });
      const type = resp.headers.get("Content-Type") || "";
      if (resp.ok && type.startsWith("text/event-stream") && resp.body) {
        await readStream(resp.body, mine, text);
        return;
      }
      let body = null;
      try {
        body = await resp.json();
      } catch (e) {
        body = null;
      }
      if (mine !== seq) return;
      if (!resp.ok) {
        if (resp.status === 401) authEl.hidden = false;
        const code = body && body.error && typeof body.error === "object" ? body.error.code : "";
        const msg = errorMessage(body, resp.status);
        if (code === "unknown_thread" || code === "expired_thread" || code === "threads_unavailable") {
          if (payload.thread_id) ended = true;
          threadId = null; // the next question starts a new conversation (one the server can answer)
          showError("This conversation is no longer available: " + msg);
          return;
        }
        showError("The question could not be answered: " + msg);
        return;
      }
      if (!body || typeof body !== "object" || typeof body.answer !== "string") {
        // e.g. the sign-in page of a proxy in front of the server, whose session expired
        showError("The server's response is not an answer (HTTP " + resp.status + ", " + (type.split(";")[0] || "no content type") +
                  "). If a sign-in page guards this server, reload the page to sign in again, then ask again.");
        return;
      }
      begin(text);
      render(body);
    } catch (err) {
      if (err && err.name === "AbortError") return; // replaced by a newer question
      if (mine === seq) showError("The server could not be reached: " + (err && err.message ? err.message : err));
    } finally {
      if (mine === seq) {
        inflight = null;
        setBusy(false);
      }
    }
  }

  // server-sent events over fetch: "sources", then "delta"s, then "final" (or "error")
  async function readStream(stream, mine, text) {
    const reader = stream.getReader();
    const decoder = new TextDecoder();
    let buf = "";
    let started = false;
    let ended = false; // the final or the error event arrived: the stream said how it ends
    for (;;) {
      let chunk;
      try {
        chunk = await reader.read();
      } catch (err) {
        if (mine !== seq || (err && err.name === "AbortError")) throw err;
        showError("The connection was lost mid-answer (" + (err && err.message ? err.message : err) + "). " +
                  dropDraft() + "Ask again.");
        return;
      }
      const { value, done } = chunk;
      if (mine !== seq) {
        reader.cancel().catch(() => {});
        return;
      }
      buf += decoder.decode(value || new Uint8Array(), { stream: !done });
      let cut;
      while ((cut = buf.indexOf("\n\n")) >= 0) {
        const block = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        let name = "message";
        const data = [];
        for (const line of block.split("\n")) {
          if (line.startsWith("event:")) name = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        }
        let ev = null;
        try {
          ev = JSON.parse(data.join("\n"));
        } catch (e) {
          continue;
        }
        if (!started) {
          begin(text);
          started = true;
        }
        if (name === "sources") {
          statusEl.textContent = "Found " + (ev.sources || []).length + " sources; writing the answer…";
          showStandalone(ev.standalone_question);
        } else if (name === "delta") {
          answerEl.classList.add("streaming");
          answerEl.appendChild(document.createTextNode(String(ev.text || "")));
        } else if (name === "final") {
          ended = true;
          render(ev);
        } else if (name === "error") {
          ended = true;
          showError("The question could not be answered: " + (typeof ev.message === "string" && ev.message ? ev.message : "the stream failed") + ". " + dropDraft());
        }
      }
      if (done) {
        if (!ended) {
          // a proxy closed the stream, a worker was recycled: the text so far was never checked
          showError("The answer was cut off: the stream ended before the finished answer arrived. " +
                    dropDraft() + "Ask again.");
        }
        return;
      }
    }
  }

  // the streamed text is a draft until the final event checks it: a stream that ends otherwise
  // must not leave it on screen as if it were the answer. Says what it did, for the error message.
  function dropDraft() {
    const drafted = answerEl.classList.contains("streaming") && answerEl.textContent !== "";
    answerEl.classList.remove("streaming");
    clear(answerEl);
    return drafted ? "The part already written was removed: it had not been checked against the sources. " : "";
  }

  // a new turn on screen: the turn shown so far moves up into the conversation
  function begin(text) {
    if (ended) endConversation();
    else if (shown && threadId) archive(shown);
    ended = false;
    shown = null;
    result.hidden = false;
    currentQuestion.textContent = text;
    banner.hidden = true;
    warningEl.hidden = true;
    replacedNote.hidden = true;
    showStandalone(null);
    clear(answerEl);
    clear(sourcesEl);
    sourcesHeading.hidden = true;
    traceEl.textContent = "";
    answerEl.dataset.question = text;
  }

  // The conversation on screen is over (its thread expired, is unknown, or cannot be read): all of it,
  // its last turn too, moves into a section of its own marked as ended, so the new conversation's
  // history above the question box holds only its own turns.
  function endConversation() {
    if (shown) archive(shown);
    shown = null;
    if (!turnsEl.firstChild) return;
    const old = el("ol", { className: "turns" });
    while (turnsEl.firstChild) old.appendChild(turnsEl.firstChild);
    conversation.before(el("section", { className: "conversation ended", "aria-label": "An earlier conversation (ended)" },
      el("p", { className: "muted", text: "An earlier conversation, no longer available on the server:" }), old));
    conversation.hidden = true;
  }

  function archive(turn) {
    const a = turn.ans;
    const sources = el("ol", { className: "turn-sources" });
    for (const c of a.citations || []) {
      const href = safeHref(c.url, c.source);
      sources.appendChild(el("li", null, href
        ? el("a", { href: href, target: "_blank", rel: "noopener noreferrer", text: c.title || c.url })
        : el("span", { text: c.title || c.url })));
    }
    turnsEl.appendChild(el("li", { className: "turn" + (a.refused ? " refused" : ""), "data-thread-id": a.thread_id },
      el("p", { className: "you", text: turn.question }),
      turnAnswer(a.answer || ""),
      (a.citations || []).length ? sources : null));
    conversation.hidden = false;
  }

  // an earlier answer, drawn like the current one (its markers as text: its cards are gone)
  function turnAnswer(text) {
    const node = el("div", { className: "turn-answer answer" });
    renderAnswer(text, new Map(), node);
    return node;
  }

  function showStandalone(q) {
    standaloneEl.hidden = !q;
    standaloneEl.textContent = q ? "Understood as: " + q : "";
  }

  newThreadBtn.addEventListener("click", () => {
    // the question in flight belongs to the old conversation: abort it, and the new number drops its
    // answer (the mine !== seq checks), so it neither shows nor brings the old thread_id back
    if (inflight) inflight.abort();
    inflight = null;
    seq += 1;
    setBusy(false);
    errorEl.hidden = true;
    threadId = null;
    shown = null;
    ended = false;
    clear(turnsEl);
    for (const old of document.querySelectorAll(".conversation.ended")) old.remove();
    conversation.hidden = true;
    result.hidden = true;
    newThreadBtn.hidden = true;
    question.value = "";
    question.focus();
  });

  function submit() {
    const text = question.value.trim();
    if (!text) {
      question.focus();
      return;
    }
    ask(text);
  }

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    submit();
  });

  question.addEventListener("keydown", (e) => {
    // Enter asks; Shift+Enter (the browser's default) starts a new line
    if (e.key === "Enter" && !e.shiftKey && !e.altKey && !e.ctrlKey && !e.metaKey && !e.isComposing) {
      e.preventDefault();
      submit();
    }
  });

  // ---- rendering ---------------------------------------------------------------------------
  function render(ans) {
    result.hidden = false;
    answerEl.classList.remove("streaming");
    replacedNote.hidden = !ans.replaced;
    showStandalone(ans.standalone_question);
    if (ans.thread_id) {
      threadId = ans.thread_id;
      newThreadBtn.hidden = false;
    }
    shown = { question: answerEl.dataset.question || lastQuestion, ans: ans };
    banner.hidden = !ans.refused;
    warningEl.hidden = !ans.warning;
    warningEl.textContent = ans.warning ? "Note: " + ans.warning : "";
    result.dataset.mode = ans.mode || "";
    answerEl.classList.toggle("refused", !!ans.refused);

    const byN = new Map((ans.citations || []).map((c) => [c.n, c]));
    clear(answerEl);
    // Only the markers the system placed are links: those listed in `citations`, outside code
    // (a document's own "items[1]" in a code span or block stays text).
    renderAnswer(String(ans.answer || ""), byN, answerEl);

    clear(sourcesEl);
    for (const c of ans.citations || []) sourcesEl.appendChild(card(c));
    sourcesHeading.hidden = !(ans.citations || []).length;

    traceEl.textContent = ans.trace_id || "";
    copyBtn.textContent = "Copy";
    resetFeedback();
  }

  // Text and code, alternately (the even parts are text), read as answering/markers.code_ranges reads
  // Markdown: a fenced block needs its closing fence (an unclosed fence line is text), a code span its
  // closing run of as many backticks within a paragraph ("three backticks ``` in a sentence" is text).
  // With ``spans`` false, only the fenced blocks: the text parts keep their code spans, for renderText,
  // which finds the tables first (a table's cells hold code spans: `--format` | csv).
  function splitCode(text, spans = true) {
    const lines = text.split("\n");
    const starts = [0];
    for (const line of lines) starts.push(starts[starts.length - 1] + line.length + 1);
    const marks = [];  // [line, fence run, whether the line is the bare run]
    lines.forEach((line, i) => {
      const m = /^\s*(`{3,}(?=[^`]*$)|~{3,})(.*)$/.exec(line);
      if (m) marks.push([i, m[1], !m[2].trim()]);
    });
    const blocks = [];
    for (let k = 0; k < marks.length; ) {
      // CommonMark: the closing fence is a bare run of the same character, at least as long as the
      // opening one (a ```` block may show a ``` block)
      const run = marks[k][1];
      let close = -1;
      for (let j = k + 1; j < marks.length; j++) {
        if (marks[j][2] && marks[j][1][0] === run[0] && marks[j][1].length >= run.length) { close = j; break; }
      }
      if (close < 0) { k++; continue; }
      const c = marks[close][0];
      blocks.push([starts[marks[k][0]], starts[c] + lines[c].length]);
      k = close + 1;
    }
    const ranges = [];
    let pos = 0;
    for (const [a, b] of blocks.concat([[text.length, text.length]])) {
      if (spans) codeSpans(text, pos, a, ranges);
      if (b > a) ranges.push([a, b]);
      pos = b;
    }
    const parts = [];
    pos = 0;
    for (const [a, b] of ranges) {
      parts.push(text.slice(pos, a), text.slice(a, b));
      pos = b;
    }
    parts.push(text.slice(pos));
    return parts;
  }

  function codeSpans(text, start, end, out) {
    const sub = text.slice(start, end);
    const runs = [];
    const re = /`+/g;
    let m;
    while ((m = re.exec(sub)) !== null) runs.push([m.index, m.index + m[0].length]);
    for (let k = 0; k < runs.length; ) {
      const n = runs[k][1] - runs[k][0];
      let close = -1;
      for (let j = k + 1; j < runs.length; j++) {
        if (runs[j][1] - runs[j][0] === n) { close = j; break; }
      }
      if (close >= 0 && !/\n[ \t]*\n/.test(sub.slice(runs[k][1], runs[close][0]))) {
        out.push([start + runs[k][0], start + runs[close][1]]);
        k = close + 1;
      } else {
        k++;
      }
    }
  }

  // An answer's text into ``target``: code blocks and spans as code, Markdown tables as tables, and
  // the [n] markers listed in ``byN`` as links to their cards (the others stay text).
  function renderAnswer(text, byN, target) {
    let afterBlock = false;
    splitCode(text, false).forEach((part, i) => {
      if (i % 2 === 1) {
        const node = codeNode(part);
        target.appendChild(node);
        afterBlock = node.tagName === "PRE";
      } else {
        // a <pre> ends its line: the line break after its closing fence would be an empty line
        renderText(afterBlock ? part.replace(/^\n/, "") : part, byN, target);
      }
    });
  }

  // A fenced block as <pre><code> (its fence lines dropped, the language as a class), a code span as
  // <code>; the text inside stays text.
  function codeNode(part) {
    const fence = /^(\s*)(`{3,}|~{3,})([^\n]*)\n([\s\S]*?)\n?\s*(`{3,}|~{3,})\s*$/.exec(part);
    if (fence) {
      const lang = fence[3].trim().split(/\s+/)[0];
      return el("pre", { className: "code" }, el("code", { className: lang ? "language-" + lang : null, text: fence[4] }));
    }
    const span = /^(`+)([\s\S]*?)\1$/.exec(part);
    return el("code", { text: span ? span[2].replace(/^ ([\s\S]*\S[\s\S]*) $/, "$1") : part });
  }

  // Text with its Markdown tables (rows between pipes, the second line a | --- | separator, as the
  // server writes a table it quotes) drawn as <table>; the rest with its markers linked.
  const TABLE_SEPARATOR = /^\s*\|?(\s*:?-{3,}:?\s*\|)*\s*:?-{3,}:?\s*\|?\s*$/;

  function renderText(text, byN, target) {
    const lines = text.split("\n");
    let buf = [];
    const flush = () => {
      if (buf.length) renderInline(buf.join("\n"), byN, target);
      buf = [];
    };
    for (let i = 0; i < lines.length; ) {
      if (lines[i].trim().startsWith("|") && i + 1 < lines.length && TABLE_SEPARATOR.test(lines[i + 1])) {
        let j = i + 2;
        while (j < lines.length && lines[j].trim().startsWith("|")) j++;
        flush();
        target.appendChild(tableNode(lines[i], lines.slice(i + 2, j)));
        i = j;
      } else {
        buf.push(lines[i]);
        i++;
      }
    }
    flush();
  }

  function cells(row) {
    let r = row.trim();
    if (r.startsWith("|")) r = r.slice(1);
    if (r.endsWith("|") && !r.endsWith("\\|")) r = r.slice(0, -1);
    return r.split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, "|"));
  }

  // A cell's text with its code spans as <code> (a marker in a cell stays text: markers follow the table).
  function cell(tag, text, attrs) {
    const node = el(tag, attrs);
    renderInline(text, new Map(), node);
    return node;
  }

  function tableNode(header, rows) {
    const head = el("tr", null, ...cells(header).map((c) => cell("th", c, { scope: "col" })));
    const body = rows.map((r) => el("tr", null, ...cells(r).map((c) => cell("td", c, null))));
    return el("table", { className: "answer-table" }, el("thead", null, head), el("tbody", null, ...body));
  }

  // Text with its code spans as <code> and, outside them, the markers of ``byN`` linked.
  function renderInline(text, byN, target) {
    splitCode(text).forEach((part, i) => {
      if (i % 2 === 1) target.appendChild(codeNode(part));
      else if (part) linkMarkers(part, byN, target);
    });
  }

  // Character references outside code (&lt; &amp; &#91; …) as a Markdown client shows them: the server
  // writes a document's "<" that would open a tag as &lt; (answers.md). Decoded here by hand, never by
  // an HTML parser, into a text node: no markup can come of it, and a decoded "[1]" is never linked (the
  // markers are found before). A named reference other than these few stays as written.
  const CHAR_REF = /&(?:#([0-9]{1,7})|#[xX]([0-9a-fA-F]{1,6})|(lt|gt|amp|quot|apos|nbsp));/g;
  const NAMED_REF = { lt: "<", gt: ">", amp: "&", quot: '"', apos: "'", nbsp: "\u00a0" };
  function textNode(text) {
    return document.createTextNode(text.replace(CHAR_REF, (ref, dec, hex, name) => {
      if (name) return NAMED_REF[name];
      const cp = dec ? parseInt(dec, 10) : parseInt(hex, 16);
      // as HTML reads them: NUL, a surrogate or a number past Unicode is U+FFFD
      return cp === 0 || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff ? "\ufffd" : String.fromCodePoint(cp);
    }));
  }

  function linkMarkers(text, byN, target) {
    const answerEl = target;
    const re = /\[(\d+)\]/g;
    let last = 0;
    let m;
    while ((m = re.exec(text)) !== null) {
      if (m.index > last) answerEl.appendChild(textNode(text.slice(last, m.index)));
      const n = Number(m[1]);
      if (byN.has(n)) {
        const a = el("a", { className: "cite", href: "#source-" + n, "data-n": n, title: byN.get(n).title,
                            "aria-label": "source " + n, text: "[" + n + "]" });
        a.addEventListener("click", (e) => {
          e.preventDefault();
          openSource(n, true);
        });
        answerEl.appendChild(a);
      } else {
        answerEl.appendChild(document.createTextNode(m[0]));
      }
      last = re.lastIndex;
    }
    if (last < text.length) answerEl.appendChild(textNode(text.slice(last)));
  }

  function card(c) {
    const href = safeHref(c.url, c.source);
    const titleNode = href
      ? el("a", { className: "title", href: href, target: "_blank", rel: "noopener noreferrer", text: c.title || c.url })
      : el("span", { className: "title", text: c.title || c.url });
    const toggle = el("button", { type: "button", className: "toggle small", "aria-expanded": "false",
                                  "aria-controls": "source-" + c.n + "-text", text: "Show source" });
    const body = el("div", { className: "chunk", id: "source-" + c.n + "-text", hidden: true });
    const li = el("li", { className: "card", id: "source-" + c.n, "data-n": c.n, "data-chunk-id": c.chunk_id },
      el("div", { className: "card-head" },
        el("span", { className: "num", text: c.n }),
        el("div", { className: "card-title" }, titleNode, el("div", { className: "url", text: c.url })),
      ),
      el("p", { className: "snippet", text: c.snippet || "" }),
      c.supported === false ? el("p", { className: "flag", text: "This source only weakly supports the sentence that cites it." }) : null,
      toggle,
      body,
    );
    li._citation = c;
    toggle.addEventListener("click", () => setOpen(li, toggle.getAttribute("aria-expanded") !== "true"));
    return li;
  }

  async function setOpen(li, open) {
    const toggle = li.querySelector(".toggle");
    const body = li.querySelector(".chunk");
    toggle.setAttribute("aria-expanded", open ? "true" : "false");
    toggle.textContent = open ? "Hide source" : "Show source";
    body.hidden = !open;
    li.classList.toggle("open", open);
    if (open && !li.dataset.loaded) {
      li.dataset.loaded = "loading";
      await loadChunk(li, body);
    }
  }

  async function loadChunk(li, body) {
    const c = li._citation;
    clear(body);
    body.appendChild(el("p", { className: "muted", text: "Loading the source…" }));
    let chunk = null;
    let problem = null;
    try {
      const resp = await fetch("chunks/" + encodeURIComponent(c.chunk_id), { headers: authHeaders() });
      const data = await resp.json().catch(() => null);
      if (resp.ok && data) chunk = data;
      else problem = errorMessage(data, resp.status);
    } catch (e) {
      problem = e && e.message ? e.message : String(e);
    }
    clear(body);
    if (chunk) {
      const path = [chunk.title, ...(chunk.headings || [])].filter(Boolean).join(" › ");
      body.appendChild(el("div", { className: "chunk-path", text: path }));
      body.appendChild(el("pre", { className: "chunk-text", text: chunk.text || "" }));
      const parent = (chunk.parent_chain || [])[0];
      if (parent) {
        const ph = safeHref(parent.url, parent.source);
        const label = [parent.title, ...(parent.headings || [])].filter(Boolean).join(" › ") || parent.url;
        body.appendChild(el("p", { className: "muted parent" }, "Part of: ",
          ph ? el("a", { href: ph, target: "_blank", rel: "noopener noreferrer", text: label })
             : el("span", { text: label })));
      }
      li.dataset.loaded = "chunk";
    } else {
      body.appendChild(el("pre", { className: "chunk-text", text: c.snippet || "" }));
      body.appendChild(el("p", { className: "muted", text: "Showing the snippet: the full source could not be loaded (" + problem + ")." }));
      li.dataset.loaded = "snippet";
    }
  }

  function openSource(n, scroll) {
    const li = document.getElementById("source-" + n);
    if (!li) return;
    setOpen(li, true);
    if (scroll) {
      // a marker was followed: the keyboard goes to the card too, not just the eyes
      li.querySelector(".toggle").focus({ preventScroll: true });
      li.scrollIntoView({ behavior: "smooth", block: "nearest" });
    }
    li.classList.remove("flash");
    void li.offsetWidth; // restart the highlight animation
    li.classList.add("flash");
  }

  // ---- trace id ----------------------------------------------------------------------------
  copyBtn.addEventListener("click", async () => {
    const text = traceEl.textContent;
    let ok = false;
    try {
      if (navigator.clipboard && window.isSecureContext) {
        await navigator.clipboard.writeText(text);
        ok = true;
      }
    } catch (e) {
      ok = false;
    }
    if (!ok) {
      const ta = el("textarea", { readonly: true, className: "offscreen" });
      ta.value = text;
      document.body.appendChild(ta);
      ta.select();
      try {
        ok = document.execCommand("copy");
      } catch (e) {
        ok = false;
      }
      document.body.removeChild(ta);
    }
    copyBtn.textContent = ok ? "Copied" : "Copy failed";
    setTimeout(() => {
      copyBtn.textContent = "Copy";
    }, 2000);
  });

  // ---- feedback: thumbs up/down and a comment, POST /feedback with the trace id ----------------
  const fbStatus = $("feedback-status");
  const fbComment = $("feedback-comment");
  const fbButtons = [$("feedback-up"), $("feedback-down")];

  function resetFeedback() {
    fbStatus.textContent = "";
    fbComment.value = "";
    for (const b of fbButtons) {
      b.disabled = false;
      b.setAttribute("aria-pressed", "false");
    }
  }

  async function sendFeedback(rating, btn) {
    const body = { trace_id: traceEl.textContent, rating: rating };
    const comment = fbComment.value.trim();
    if (comment) body.comment = comment;
    fbStatus.textContent = "Sending…";
    try {
      const r = await fetch("feedback", { method: "POST", headers: { "Content-Type": "application/json", ...authHeaders() },
                                           body: JSON.stringify(body) });
      const data = await r.json().catch(() => null);
      if (!r.ok) {
        fbStatus.textContent = "Feedback not saved: " + errorMessage(data, r.status);
        return;
      }
      btn.setAttribute("aria-pressed", "true");
      fbStatus.textContent = "Thanks, feedback saved.";
      // a disabled button loses focus to <body>: the keyboard user lands on the thanks instead
      if (fbButtons.includes(document.activeElement)) fbStatus.focus();
      for (const b of fbButtons) b.disabled = true;
    } catch (e) {
      fbStatus.textContent = "Feedback not saved: the server did not answer.";
    }
  }

  $("feedback-up").addEventListener("click", (e) => sendFeedback("up", e.currentTarget));
  $("feedback-down").addEventListener("click", (e) => sendFeedback("down", e.currentTarget));

  // ---- token (when the server asks for one) --------------------------------------------------
  const tokenProblem = $("token-problem");
  $("save-token").addEventListener("click", () => {
    const t = tokenInput.value.trim();
    if (BAD_TOKEN.test(t)) {
      tokenProblem.textContent = "This token has a control character (such as a line break), which an HTTP header " +
        "cannot carry: paste the token without it.";
      tokenProblem.hidden = false;
      tokenInput.focus();
      return;
    }
    tokenProblem.hidden = true;
    if (t) sessionStorage.setItem(TOKEN_KEY, t);
    else sessionStorage.removeItem(TOKEN_KEY);
    tokenInput.value = "";
    authEl.hidden = true;
    if (lastQuestion) ask(lastQuestion);
  });

  // ---- what is indexed ---------------------------------------------------------------------
  fetch("health")
    .then((r) => (r.ok ? r.json() : null))
    .then((h) => {
      if (!h || !h.sources) return;
      const parts = Object.entries(h.sources).map(([name, n]) => name + " (" + n + " chunks)");
      $("index-info").textContent = "Indexed: " + (parts.join(", ") || "nothing yet") + " · model " + h.embedding_model;
    })
    .catch(() => {});

  question.focus();
})();
