"""A real HTTP server on 127.0.0.1 speaking the OpenAI chat completions API.

The requested ``model`` picks the behaviour: ``valid`` (cites real sources with their sentences),
``invent`` (cites a source number that was not given), ``last`` (cites the last source it was given), ``uncited`` (no citations), ``refuse``
(the NO_ANSWER form), ``echo`` (repeats source 1 sentence by sentence, each cited ``[1]``: what a
model fooled by the text it was given would write), ``unsupported`` (cites a source that doesn't support the claim), ``slow``
(never answers in time), ``held`` (answers as ``valid`` once the test sets ``release``), ``steered`` (rewrites every follow-up
into another question, as a model steered by text in its prompt does; answers as ``valid``), ``error500``, ``error429``, ``quota429`` (OpenAI's 429 for an exhausted quota), ``malformed`` (not JSON), ``deepjson`` (JSON nested 5,000 levels deep),
``keyecho`` (a 401 whose message repeats the key it got), ``errorstring`` (a 404 whose
``error`` is a string), ``html`` (a 200 HTML page), ``onlymarkers`` (an answer of markers and a stop, no word),
``cutoff`` / ``filtered`` (a valid sentence, then a table cut mid-row, ``finish_reason`` ``length`` /
``content_filter``), ``cutstream`` (the same, streamed, then the stream just ends: no ``finish_reason``, no ``[DONE]``), ``overthought`` (empty content, all of max_tokens in ``reasoning_content``: ``length``), ``think``
(a ``<think>`` block, then a ``valid`` answer), ``reasoner`` (the same thought in ``reasoning_content``),
``thinkcut`` (a ``<think>`` block never closed), ``thinkopened`` (a block whose ``<think>`` the chat template wrote: only its end), ``thinkquoted`` (a ``<think>`` block whose
thoughts quote ``</think>`` in a code span, then ``echo``'s answer), ``escapes`` (a cited sentence that is an OSC 8 link to
evil.example, with a C1 CSI and a screen clear, streamed 7 characters a piece), ``splitemoji`` (a cited sentence with an emoji whose
UTF-16 halves are streamed in two events), ``errorbody`` (HTTP 200 with an ``error`` object), ``nostream``
(ignores ``"stream": true``: a whole ``chat.completion``), ``sselabelledjson`` (events under a JSON type),
``endless`` (streamed: a cited sentence every 0.2 s for as long as the reader keeps the connection open;
``hung_up`` is released when it closes it), ``strict`` (answers as ``valid``, but a request with a field it does not know, such as ``stream_options``,
is a 400 naming it). A stream asked for ``stream_options: {"include_usage": true}`` ends with a chunk
that has no choices and the ``usage``, as OpenAI's does.

With ``"stream": true`` the answer comes as OpenAI's server-sent events (``chat.completion.chunk``
deltas of a few characters, then ``data: [DONE]``). A request whose system prompt is the follow-up
rewrite prompt is answered with a standalone question: the previous question, then the follow-up.
Each completion reports ``usage`` as a real server does: ``prompt_tokens`` the words of the messages,
``completion_tokens`` the words of the answer (a deterministic stand-in for a tokenizer).
"""

from __future__ import annotations

import json
import re
import threading
import time

from .local_http import LocalServer, QuietHandler

SOURCE_RE = re.compile(r"^\[(\d+)\] .*?\nURL: .*?\n(.*?)(?=\n\n\[\d+\] |\n\nQuestion: )", re.S | re.M)


def first_sentence(text: str) -> str:
    text = text.split("\n(Context from")[0].strip().lstrip("… ")
    s = re.split(r"(?<=[.!?])\s+", text.replace("\n", " "))[0]
    return s.rstrip(".") + "."


def usage(messages: list[dict], content: str) -> dict[str, int]:
    prompt = sum(len(str(m.get("content", "")).split()) for m in messages)
    completion = len(content.split())
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


#: what a server that forbids fields it does not know reads (an older Azure OpenAI API version)
STRICT_FIELDS = {"model", "messages", "temperature", "max_tokens", "stream"}


def model_is_strict(body: dict) -> bool:
    return str(body.get("model", "")).startswith("strict")


class ChatServer(LocalServer):
    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.streamed = 0  # answers sent as server-sent events
        self.encodings: list[str | None] = []  # each request's Accept-Encoding
        self.flooded = 0  # the most bytes a "flood" answer got out before the client hung up
        self.stop = threading.Event()
        self.hung_up = threading.Semaphore(0)  # released once for each "endless" stream whose reader closed it
        self.release = threading.Event()  # lets the "held" answers go
        self.held = 0  # "held" requests received
        self.lock = threading.Lock()
        outer = self

        class Handler(QuietHandler):
            def do_POST(self):  # noqa: N802
                body = self.body = json.loads(self.read_body())
                outer.requests.append(body)
                if model_is_strict(body) and set(body) - STRICT_FIELDS:  # as a server that forbids extra fields
                    field = sorted(set(body) - STRICT_FIELDS)[0]
                    return self.send_json(400, {"error": {"message": f"Unrecognized request argument supplied: {field}",
                                                          "type": "invalid_request_error"}})
                outer.encodings.append(self.headers.get("Accept-Encoding"))
                model = body["model"]
                user = body["messages"][-1]["content"]
                sources = {int(n): t for n, t in SOURCE_RE.findall(user)}
                if body["messages"][0]["content"].startswith("You rewrite") and model not in ("slow", "error500"):
                    if model == "steered":  # a model a text it was shown steered: another question
                        return self.reply(model, "How do I delete every dashboard permanently?", body.get("stream"),
                                          body["messages"])
                    prev = re.findall(r"^User: (.*)$", user, re.M)[-1].rstrip("?")
                    last = user.rsplit("Last question: ", 1)[1].strip()
                    return self.reply(model, f"{prev}: {last}", body.get("stream"), body["messages"])
                if model == "slow":
                    outer.stop.wait(30)
                    return
                if model == "held":  # held until the test sets ``release`` (at most 60 s), then a valid answer
                    with outer.lock:
                        outer.held += 1
                    if outer.release.wait(60):
                        content = " ".join(f"{first_sentence(sources[n])} [{n}]" for n in sorted(sources)[:2])
                        return self.reply(model, content, body.get("stream"), body["messages"])
                    return
                if model in ("drip", "closemid") and not body.get("stream"):
                    # a valid answer whose bytes trickle in (4 every 0.2 s: 7 s in all), or stop halfway
                    data = json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": model,
                                       "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                           "role": "assistant", "content": f"{first_sentence(sources[1])} [1]"}}]})
                    data = data.encode().ljust(140)
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.flush()
                    if model == "closemid":
                        self.wfile.write(data[:len(data) // 2])
                        self.wfile.flush()
                        self.close_connection = True
                        return
                    for i in range(0, len(data), 4):
                        if outer.stop.wait(0.2):
                            return
                        self.wfile.write(data[i:i + 4])
                        self.wfile.flush()
                    return
                if model == "endless" and body.get("stream"):  # a cited piece every 0.2 s while its reader stays
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": model,
                             "choices": [{"index": 0, "delta": {"content": f"{first_sentence(sources[1])} [1] "},
                                          "finish_reason": None}]}
                    try:
                        while not outer.stop.wait(0.2):
                            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                            self.wfile.flush()
                    except OSError:  # the reader closed the connection
                        outer.hung_up.release()
                    self.close_connection = True
                    return
                if model == "flood":  # 200, then a body without end: one endless answer string (or SSE line)
                    self.send_response(200)
                    stream = bool(body.get("stream"))
                    self.send_header("Content-Type", "text/event-stream" if stream else "application/json")
                    self.end_headers()
                    head = ('data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"flood",'
                            '"choices":[{"index":0,"delta":{"content":"' if stream else
                            '{"id":"c","object":"chat.completion","created":0,"model":"flood",'
                            '"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"')
                    block, sent = b"a" * 65536, 0
                    try:
                        self.wfile.write(head.encode())
                        while sent < 2_000_000_000 and not outer.stop.is_set():
                            self.wfile.write(block)
                            sent += len(block)
                            outer.flooded = max(outer.flooded, sent)
                    except OSError:  # the client stopped reading and closed
                        pass
                    self.close_connection = True
                    return
                if model == "gzipflood":  # a small gzip body that inflates to 50 MB, sent whatever was asked for
                    import gzip

                    data = gzip.compress(('{"id":"c","object":"chat.completion","created":0,"model":"gzipflood",'
                                          '"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant",'
                                          '"content":"' + "a" * 50_000_000 + '"}}]}').encode(), 1)
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Encoding", "gzip")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                if model == "error500":
                    return self.send_json(500, {"error": {"message": "boom"}})
                if model == "error401":
                    return self.send_json(401, {"error": {"message": "Incorrect API key provided: not-needed.",
                                                          "code": "invalid_api_key"}})
                if model == "error404":
                    return self.send_json(404, {"error": {"message": "The model `error404` does not exist"}})
                if model == "keyecho":  # a 401 that says which key it rejected, as many servers do
                    got = self.headers.get("Authorization", "").removeprefix("Bearer ")
                    return self.send_json(401, {"error": {"message": f"Incorrect API key provided: {got}",
                                                          "code": "invalid_api_key"}})
                if model == "errorstring":  # an error that is a string (Ollama, LM Studio, LiteLLM)
                    return self.send_json(404, {"error": f'model "{model}" not found, try pulling it first'})
                if model == "html":  # a web UI at base_url that serves its page for any path
                    data = b"<!doctype html><html><head><title>Open WebUI</title></head><body></body></html>"
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html; charset=utf-8")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                if model == "error429":
                    return self.send_json(429, {"error": {"message": "slow down"}})
                if model == "quota429":
                    return self.send_json(429, {"error": {
                        "message": "You exceeded your current quota, please check your plan and billing details.",
                        "type": "insufficient_quota", "code": "insufficient_quota"}})
                if model == "errorbody":  # a 200 whose body is an error, as OpenRouter or LiteLLM pass one on
                    return self.send_json(200, {"error": {"message": "Provider returned error: upstream overloaded",
                                                          "code": 502}})
                if model == "nostream":  # ignores "stream": true: the whole chat.completion as JSON
                    content = " ".join(f"{first_sentence(sources[n])} [{n}]" for n in sorted(sources)[:2])
                    return self.reply(model, content, False, body["messages"])
                if model == "sselabelledjson":  # events, as a stream, under Content-Type: application/json
                    self.content_type = "application/json"
                    return self.reply(model, f"{first_sentence(sources[1])} [1]", body.get("stream"), body["messages"])
                if model == "deepjson":  # 10 KB of JSON nested 5,000 levels: the body, or a stream's one event
                    deep = b"[" * 5000 + b"]" * 5000
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream" if body.get("stream") else "application/json")
                    self.send_header("Content-Length", str(len(deep) + (8 if body.get("stream") else 0)))
                    self.end_headers()
                    self.wfile.write(b"data: " + deep + b"\n\n" if body.get("stream") else deep)
                    return
                if model == "malformed":
                    data = b"<html>not json</html>"
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                if model in ("valid", "steered", "strict"):
                    parts = [f"{first_sentence(sources[n])} [{n}]" for n in sorted(sources)[:2]]
                    content = " ".join(parts)
                elif model == "last":  # the last source it was given, cited
                    content = f"{first_sentence(sources[max(sources)])} [{max(sources)}]"
                elif model == "invent":
                    content = f"{first_sentence(sources[1])} [1] It also supports quantum mode [{len(sources) + 7}]."
                elif model == "uncited":
                    content = f"{first_sentence(sources[1])} [1] And here is a claim with no source."
                elif model == "echo":
                    text = sources[1].split("\n(Context from")[0].replace("\n", " ").strip()
                    content = " ".join(f"{s} [1]" for s in re.split(r"(?<=[.!?])\s+", text) if s.strip())
                elif model == "refuse":
                    content = "NO_ANSWER: the sources do not say"
                elif model == "huge":  # a server that ignores max_tokens: 20,000 cited sentences (1 MB)
                    content = " ".join([f"{first_sentence(sources[1])} [1]"] * 20_000)
                elif model == "surrogate":  # half a UTF-16 surrogate pair, as JSON's "\ud800" escape writes it
                    content = f"\ud800 {first_sentence(sources[1])} [1]"
                elif model == "drip":  # streamed: a long valid answer, a piece every 0.5 s
                    content = " ".join([f"{first_sentence(sources[1])} [1]"] * 20)
                elif model == "worded":  # a refusal in words instead of NO_ANSWER, citing a source anyway
                    content = "The provided sources do not specify how a converter is registered [1]."
                elif model == "partly":  # an answer that also says one detail is not covered
                    content = f"{first_sentence(sources[1])} [1] The documentation does not say how to undo it [1]."
                elif model == "onlymarkers":  # markers and a stop, no word
                    content = "[1][2]."
                elif model == "unsupported":
                    content = "Penguins migrate across the Sahara every winter [1]."
                elif model in ("cutoff", "filtered"):  # stopped by max_tokens mid-table / by a content filter
                    content = (f"{first_sentence(sources[1])} [1]\n\n| Key | Default |\n|---|---|\n| port | 8080 |\n"
                               "| timeout_")
                    return self.reply(model, content, body.get("stream"), body["messages"],
                                      finish="length" if model == "cutoff" else "content_filter")
                elif model == "cutstream":  # a stream that just ends mid-row: no finish_reason, no [DONE]
                    content = (f"{first_sentence(sources[1])} [1]\n\n| Key | Default |\n|---|---|\n| port | 8080 |\n"
                               "| timeout | 3")
                    return self.reply(model, content, body.get("stream"), body["messages"], finish=None)
                elif model == "escapes":  # terminal escape sequences: an OSC 8 link, a C1 CSI, a screen clear
                    s = first_sentence(sources[1])
                    content = f"\x1b]8;;https://evil.example/\x07{s[:-1]}\x1b]8;;\x07\x9b. [1]\x1b[2J"
                elif model == "thinkopened":  # a chat template that opened the block: only its end in content
                    content = ("Let me check the sources. I also recall an admin console on port 9999 [1].\n</think>\n\n"
                               f"{first_sentence(sources[1])} [1]")
                elif model in ("think", "reasoner"):  # a reasoning model: its thoughts in content, or apart
                    answer = f"{first_sentence(sources[1])} [1]"
                    thought = "Let me check the sources. I also recall an admin console on port 9999 [1]."
                    if model == "reasoner":
                        return self.reply(model, answer, body.get("stream"), body["messages"], reasoning=thought)
                    content = f"<think>\n{thought}\n</think>\n\n{answer}"
                elif model == "thinkquoted":  # thoughts that quote the closing tag in code, then the answer (echo's)
                    text = sources[1].split("\n(Context from")[0].replace("\n", " ").strip()
                    answer = " ".join(f"{s} [1]" for s in re.split(r"(?<=[.!?])\s+", text) if s.strip())
                    content = ("<think>\nThe source says the block ends with `</think>`. I also recall an admin console "
                               f"on port 9999 [1].\n</think>\n\n{answer}")
                elif model == "thinkcut":  # a think block never closed (the server stopped at a stop word)
                    content = "<think>Okay, the port is 8080 per [1]. I also recall an admin console on port 9999 [1]. Maybe"
                elif model == "splitemoji":  # an emoji's surrogate pair split over two events, as JS slices it
                    said = [f"{first_sentence(sources[1])[:-1]} \ud83d", "\ude80. [1]"]
                    return self.reply(model, "".join(said), body.get("stream"), body["messages"], pieces=said)
                elif model == "overthought":  # a reasoning model that spent all of max_tokens thinking
                    return self.reply(model, "", body.get("stream"), body["messages"], finish="length",
                                      reasoning="Let me think about what a converter does. " * 20)
                else:
                    return self.send_json(404, {"error": {"message": f"unknown model {model}"}})
                self.reply(model, content, body.get("stream"), body["messages"])

            def reply(self, model: str, content: str, stream: bool | None, messages: list, *,
                      finish: str | None = "stop", reasoning: str | None = None, pieces: list[str] | None = None) -> None:
                """``finish``: the finish_reason (of the last chunk when streamed); ``reasoning``: a
                reasoning model's ``reasoning_content`` (vLLM with a reasoning parser, DeepSeek's API);
                ``pieces``: the streamed pieces (``content`` joined), when not every 7 characters. A stream
                with ``finish`` None just ends after its last piece (no usage chunk, no ``[DONE]``), as one a
                proxy's idle timeout or a restarted worker cuts off does."""
                if not stream:
                    message = {"role": "assistant", "content": content}
                    if reasoning is not None:
                        message["reasoning_content"] = reasoning
                    return self.send_json(200, {
                        "id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time()), "model": model,
                        "choices": [{"index": 0, "finish_reason": finish, "message": message}],
                        "usage": usage(messages, content)})
                self.send_response(200)
                self.send_header("Content-Type", getattr(self, "content_type", "text/event-stream"))
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                pieces = pieces or [content[i:i + 7] for i in range(0, len(content), 7)]
                thought = [{"reasoning_content": reasoning[i:i + 7]} for i in range(0, len(reasoning or ""), 7)]
                deltas = [{"role": "assistant", "content": ""}, *thought, *({"content": p} for p in pieces), {}]
                for i, delta in enumerate(deltas):
                    if model == "drip" and outer.stop.wait(0.5):  # a piece every 0.5 s, without end in sight
                        return
                    done = i == len(deltas) - 1
                    chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": int(time.time()),
                             "model": model, "choices": [{"index": 0, "delta": delta,
                                                          "finish_reason": finish if done else None}]}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                if finish is None:
                    return
                if (self.body.get("stream_options") or {}).get("include_usage"):  # OpenAI's last chunk, no choices
                    chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": int(time.time()),
                             "model": model, "choices": [], "usage": usage(messages, content)}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                outer.streamed += 1

        super().__init__(Handler, path="/v1")

    def on_close(self) -> None:
        self.stop.set()  # release the "slow" handlers
        self.release.set()
