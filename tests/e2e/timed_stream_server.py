"""A streaming OpenAI-compatible server whose token timing is known exactly:
the ground truth that serving clients' TTFT, ITL, TPOT and E2EL are checked
against (tests/e2e/test_serving_compare.py).

Every POST /v1/completions with "stream": true gets its first token T0 after
the request arrived (its body fully read) and each next token G after the one
before, on a fixed schedule measured from that arrival: token k (0-based) is
written at arrival + T0 + k*G, never earlier, whatever happened to the tokens
before it (a late token does not push the rest back). Each request keeps its
own schedule on one asyncio loop; a stream is a few small writes, so
concurrent streams cost the loop next to nothing.

Exactly max_tokens tokens when "ignore_eos" is true. Without it the stub
"meets EOS" after ceil(max_tokens / 2) tokens, so a client that forgets
ignore_eos reports visibly wrong token counts. With
stream_options.include_usage the stream ends with a usage chunk, then
"data: [DONE]". prompt_tokens is a token-id prompt's length; for a text
prompt it is its word count with --words-are-tokens (right for the tests'
tiny model, whose tokenizer is one word per token: tiny_llama.py), else it is
left out (the stub has no tokenizer) and clients keep their own count. One
event per HTTP chunk, one token per event, keep-alive.

Prefix reuse (--prefill-ms-per-token X): the stub keeps a prefix cache of
every prompt it has prefilled (from its first token on), with the reply it generated appended (as vLLM caches
a sequence's blocks), and a request's first token comes T0 + X * (its tokens
not already cached) after arrival, so a turn that resends a cached history is
fast and a fresh prompt slow, by an amount the test knows. Tokens are a
token-id prompt's ids, or a text prompt's words; a chat request's messages
are flattened as a chat template would, "<role>" then the content's words, and
end with "<assistant>". In this mode each reply is unique to its request
(" r<N>t<k>"), so a test can find it in the next turn's history, and --log also
records what came in: the prompt's tokens, the cached count, the headers.
With --chat, POST /v1/chat/completions is served too (delta.content chunks);
without it, it is a 404, as on a server without a chat template.

Slots (--slots N): at most N requests are served at once, as an engine's
batch holds at most N sequences; a request beyond them waits for a slot, and
its schedule (T0, then G a token) starts when it gets one, so TTFT rises with
the queue once requests come faster than N slots can serve them.

Answers (--wrong-fraction F): a request that is not streamed (lm-eval's
local-completions / local-chat-completions) is answered at once, not timed:
for a prompt that ends "Repeat: <word>\nAnswer:" (the task in
tests/data/quality) the reply is <word>, except for the items the fraction
picks, answered "wrong": item n (the word's trailing number) is wrong when
floor((n + 1) * F) > floor(n * F), so of items 0..N-1 exactly floor(N * F) are
wrong, evenly spread, and a test knows which. A list of prompts gets one choice
each. Without the flag a request that is not streamed is a 400, as before.

Timers: asyncio sleeps round up to the millisecond (epoll's timeout), so a
token leaves 0-1 ms after its deadline on an idle machine; on a loaded one,
whatever the scheduler adds. The stub records, per request, how late each
token was written (--log, JSON lines), so a test can show where lateness came
from.

    python3 timed_stream_server.py --ttft-ms 200 --itl-ms 50 [--port 0]
        [--model NAME] [--words-are-tokens] [--log FILE] [--prefill-ms-per-token X] [--chat] [--slots N]
        [--wrong-fraction F] [--profile-trace FILE [--profile-lose K]] [--reasoning-tokens R]
        [--spec-decode K,A]
Reasoning (--reasoning-tokens R, chat): the first R tokens of every chat
stream are reasoning, sent as delta.reasoning_content (as vLLM's reasoning
parsers send them), the rest delta.content; usage counts all of them and says
completion_tokens_details.reasoning_tokens = R. So the first answer token
comes at T0 + R*G, the first reasoning token at T0.

Speculative decoding (--spec-decode K,A): /metrics also carries vLLM's
counters vllm:spec_decode_num_drafts_total, _num_draft_tokens_total and
_num_accepted_tokens_total, as if every generated token were one draft of K
tokens of which A were accepted: acceptance rate A/K, mean acceptance length
1 + A.

With --profile-trace, POST /start_profile and /stop_profile answer as vLLM's
profiler routes do: each stop copies FILE into $VLLM_TORCH_PROFILER_DIR as
that capture's trace (named with the start body's profile_prefix), except
the K-th stop (1-based), whose trace never appears: a capture that does not
flush, which a real server cannot be made to do on cue. Each start's body is
appended to stub_profile_starts.jsonl beside that folder.
prints "port N" on stdout once it listens. GET /health, /v1/models and
/metrics answer as vLLM's do (enough for `vllm bench serve` and
`magpie benchmark --endpoint`). Standard library only."""
import argparse
import asyncio
import json
import math
import os
import re
import sys
import time
from pathlib import Path


def sse(obj) -> bytes:
    """One SSE event as one HTTP/1.1 chunk."""
    data = b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj).encode()) + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(data), data)


def plain(status: str, body: bytes, ctype: str = "application/json") -> bytes:
    return (f"HTTP/1.1 {status}\r\ncontent-type: {ctype}\r\ncontent-length: {len(body)}\r\n\r\n"
            .encode() + body)


class PrefixCache:
    """Every token sequence seen, as a trie: how much of a new one is cached."""

    def __init__(self):
        self.root = {}

    def cached(self, tokens) -> int:
        node, n = self.root, 0
        for t in tokens:
            node = node.get(t)
            if node is None:
                break
            n += 1
        return n

    def insert(self, tokens):
        node = self.root
        for t in tokens:
            node = node.setdefault(t, {})


def chat_tokens(messages) -> list:
    out = []
    for m in messages:
        out.append(f"<{m.get('role')}>")
        out.extend(str(m.get("content", "")).split())
    return out + ["<assistant>"]


class TimedStreamServer:
    def __init__(self, ttft_s: float, itl_s: float, model: str, words_are_tokens: bool,
                 log_path: str | None, prefill_s_per_token: float | None = None, chat: bool = False,
                 slots: int = 0, wrong_fraction: float | None = None):
        self.ttft_s, self.itl_s, self.model = ttft_s, itl_s, model
        self.words_are_tokens = words_are_tokens
        self.log = open(log_path, "a") if log_path else None
        self.requests = 0
        self.tokens = 0
        self.prefill_s_per_token = prefill_s_per_token
        self.chat = chat
        self.cache = PrefixCache() if prefill_s_per_token is not None else None
        self.slots = asyncio.Semaphore(slots) if slots else None
        self.wrong_fraction = wrong_fraction
        self.profile_trace, self.profile_lose, self.profile_stops, self.profile_prefix = None, 0, 0, "stub"
        self.reasoning_tokens = 0
        self.spec_decode = None  # (K, A): draft tokens and accepted tokens per generated token

    async def serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        k, v = line.split(":", 1)
                        headers[k.strip().lower()] = v.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                arrival = time.monotonic()  # the schedule's origin: the request is fully read
                path = target.split("?")[0]
                if method == "POST" and self.profile_trace and path in ("/start_profile", "/stop_profile"):
                    writer.write(self.answer_profile(path, body))
                elif method == "POST" and (path == "/v1/completions" or (self.chat and path == "/v1/chat/completions")):
                    await self.stream_completion(writer, body, arrival, path.endswith("/chat/completions"),
                                                 headers)
                else:
                    writer.write(self.answer_get(method, target.split("?")[0]))
                await writer.drain()
                if headers.get("connection", "").lower() == "close":
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            writer.close()

    def answer_profile(self, path: str, body: bytes) -> bytes:
        if path == "/start_profile":
            start = json.loads(body) if body else {}
            self.profile_prefix = start.get("profile_prefix", "stub")
            # Each start's body, one a line, beside the trace folder (what the test checks was sent).
            with open(Path(os.environ["VLLM_TORCH_PROFILER_DIR"]).parent / "stub_profile_starts.jsonl", "a") as f:
                f.write(json.dumps(start) + "\n")
            return plain("200 OK", b"")
        self.profile_stops += 1
        if self.profile_stops != self.profile_lose:
            import shutil
            out = Path(os.environ["VLLM_TORCH_PROFILER_DIR"])
            out.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(self.profile_trace, out / f"{self.profile_prefix}_dp0_pp0_tp0.pt.trace.json.gz")
        return plain("200 OK", b"")

    def answer_get(self, method: str, path: str) -> bytes:
        if method != "GET":
            return plain("404 Not Found", b'{"error": "not found"}')
        if path == "/health":
            return plain("200 OK", b"")
        if path == "/v1/models":
            card = {"id": self.model, "object": "model", "created": 0, "owned_by": "magpie-test",
                    "root": self.model, "max_model_len": 4096}
            return plain("200 OK", json.dumps({"object": "list", "data": [card]}).encode())
        if path == "/metrics":
            text = (f"timed_stub:request_success_total {self.requests}\n"
                    f"timed_stub:generation_tokens_total {self.tokens}\n")
            if self.spec_decode:
                k, a = self.spec_decode
                text += (f'vllm:spec_decode_num_drafts_total{{engine="0"}} {self.tokens}\n'
                         f'vllm:spec_decode_num_draft_tokens_total{{engine="0"}} {k * self.tokens}\n'
                         f'vllm:spec_decode_num_accepted_tokens_total{{engine="0"}} {a * self.tokens}\n')
            return plain("200 OK", text.encode(), "text/plain; version=0.0.4")
        return plain("404 Not Found", b'{"error": "not found"}')

    def reply_to(self, prompt: str) -> str:
        m = re.findall(r"Repeat: (\S+)", prompt)
        if not m:
            return "?"
        word = m[-1]
        n = int(re.search(r"(\d+)$", word).group(1)) if re.search(r"\d+$", word) else 0
        f = self.wrong_fraction
        return "wrong" if math.floor((n + 1) * f) > math.floor(n * f) else word

    def answer(self, req, messages, chat: bool) -> bytes:
        self.requests += 1
        if chat:
            text = " ".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
            choices = [{"index": 0, "message": {"role": "assistant", "content": self.reply_to(text)},
                        "finish_reason": "stop"}]
            body = {"id": f"chatcmpl-{self.requests}", "object": "chat.completion", "created": 0,
                    "model": req.get("model"), "choices": choices}
        else:
            prompts = req.get("prompt")
            prompts = prompts if isinstance(prompts, list) else [prompts]
            choices = [{"index": i, "text": self.reply_to(str(p)), "logprobs": None, "finish_reason": "stop"}
                       for i, p in enumerate(prompts)]
            body = {"id": f"cmpl-{self.requests}", "object": "text_completion", "created": 0,
                    "model": req.get("model"), "choices": choices}
        return plain("200 OK", json.dumps(body).encode())

    async def stream_completion(self, writer: asyncio.StreamWriter, body: bytes, arrival: float,
                                chat: bool = False, headers: dict | None = None):
        try:
            req = json.loads(body)
        except ValueError:
            writer.write(plain("400 Bad Request", b'{"error": "body is not JSON"}'))
            return
        messages = req.get("messages") if chat else None
        if chat and not (isinstance(messages, list) and messages):
            writer.write(plain("400 Bad Request", b'{"error": "chat needs messages"}'))
            return
        if self.wrong_fraction is not None and not req.get("stream"):
            writer.write(self.answer(req, messages, chat))
            return
        prompt = " ".join(chat_tokens(messages)) if chat else req.get("prompt")
        single_text = isinstance(prompt, str)
        single_ids = isinstance(prompt, list) and bool(prompt) and all(isinstance(t, int) for t in prompt)
        max_tokens = req.get("max_completion_tokens", req.get("max_tokens")) if chat else req.get("max_tokens")
        if not req.get("stream") or not (single_text or single_ids) or not isinstance(max_tokens, int) \
                or max_tokens < 1:
            msg = "the timed stub serves only streamed requests with one prompt and max_tokens >= 1"
            writer.write(plain("400 Bad Request", json.dumps({"error": msg}).encode()))
            return
        ignore_eos = bool(req.get("ignore_eos"))
        n = max_tokens if ignore_eos else math.ceil(max_tokens / 2)
        opts = req.get("stream_options") or {}
        include_usage = bool(opts.get("include_usage"))
        continuous = include_usage and bool(opts.get("continuous_usage_stats"))
        prompt_tokens = len(prompt) if single_ids else len(prompt.split()) if self.words_are_tokens else None
        self.requests += 1
        rid = f"cmpl-timed-{self.requests}"
        # Prefix reuse: the first token waits for the tokens the cache does not hold.
        tokens = list(prompt) if single_ids else prompt.split()
        cached, prefill_s = 0, 0.0
        if self.cache is not None:
            cached = self.cache.cached(tokens)
            prefill_s = self.prefill_s_per_token * (len(tokens) - cached)
        # The request's own number, bound now: self.requests moves on as other requests arrive.
        word = (lambda k, n=self.requests: f" r{n}t{k}") if self.cache is not None else (lambda k: f" t{k}")

        def usage(completion: int):
            u = {"completion_tokens": completion}
            if chat and self.reasoning_tokens:
                u["completion_tokens_details"] = {"reasoning_tokens": min(completion, self.reasoning_tokens)}
            if prompt_tokens is not None:
                u.update(prompt_tokens=prompt_tokens, total_tokens=prompt_tokens + completion)
            return u

        if self.slots is not None:
            if self.slots.locked():  # queued: its schedule starts when a slot frees
                await self.slots.acquire()
                arrival = time.monotonic()
            else:
                await self.slots.acquire()
        try:
            await self.stream_tokens(writer, req, rid, n, max_tokens, ignore_eos, chat, continuous, include_usage,
                                     tokens, cached, prefill_s, word, usage, prompt_tokens, single_ids, arrival,
                                     headers)
        finally:
            if self.slots is not None:
                self.slots.release()

    async def stream_tokens(self, writer, req, rid, n, max_tokens, ignore_eos, chat, continuous, include_usage,
                            tokens, cached, prefill_s, word, usage, prompt_tokens, single_ids, arrival, headers):
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
                     b"transfer-encoding: chunked\r\n\r\n")
        late_ms = []
        prefilled_at = None
        for k in range(n):
            deadline = arrival + self.ttft_s + prefill_s + k * self.itl_s
            while (wait := deadline - time.monotonic()) > 0:  # never early, whatever the timer does
                await asyncio.sleep(wait)
            finish = None if k + 1 < n else ("length" if ignore_eos or n == max_tokens else "stop")
            if chat:
                event = {"id": rid, "object": "chat.completion.chunk", "created": 0, "model": req.get("model"),
                         "choices": [{"index": 0, "delta": {"reasoning_content" if k < self.reasoning_tokens
                                                            else "content": word(k)}, "logprobs": None,
                                      "finish_reason": finish}],
                         "usage": usage(k + 1) if continuous else None}
            else:
                event = {"id": rid, "object": "text_completion", "created": 0, "model": req.get("model"),
                         "choices": [{"index": 0, "text": word(k), "logprobs": None, "finish_reason": finish,
                                      "stop_reason": None}],
                         "usage": usage(k + 1) if continuous else None}
            writer.write(sse(event))
            if k == 0 and self.cache is not None:  # prefilled: from now on its prompt is cached
                self.cache.insert(tokens)
                prefilled_at = time.monotonic()
            await writer.drain()
            late_ms.append((time.monotonic() - deadline) * 1e3)
            self.tokens += 1
        if include_usage:
            writer.write(sse({"id": rid, "object": "chat.completion.chunk" if chat else "text_completion",
                              "created": 0, "model": req.get("model"), "choices": [], "usage": usage(n)}))
        writer.write(sse(b"[DONE]") + b"0\r\n\r\n")
        reply = [word(k).strip() for k in range(n)]
        if self.cache is not None:  # the generated tokens are cached too, as vLLM's blocks are
            self.cache.insert(tokens + reply)
        if self.log:
            record = {"id": rid, "prompt_kind": "ids" if single_ids else "text",
                      "prompt_tokens": prompt_tokens, "max_tokens": max_tokens, "ignore_eos": ignore_eos,
                      "include_usage": include_usage, "tokens": n, "late_ms": [round(x, 3) for x in late_ms],
                      "arrival": arrival}
            if self.cache is not None:
                record.update(api="chat" if chat else "completions", prompt=tokens, cached_tokens=cached,
                              prefilled_at=prefilled_at if n else None,
                              reply=reply, headers={k: v for k, v in (headers or {}).items() if k.startswith("x-")})
            self.log.write(json.dumps(record) + "\n")
            self.log.flush()


class StubProcess:
    """This stub as a child process, for tests: `url` once it listens."""

    def __init__(self, *args):
        import subprocess
        self.proc = subprocess.Popen([sys.executable, __file__, *map(str, args)], stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("port "), line
        self.url = f"http://127.0.0.1:{int(line.split()[1])}"

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


async def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ttft-ms", type=float, required=True)
    ap.add_argument("--itl-ms", type=float, required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--model", default="timed-stub")
    ap.add_argument("--words-are-tokens", action="store_true")
    ap.add_argument("--log")
    ap.add_argument("--prefill-ms-per-token", type=float, default=None)
    ap.add_argument("--chat", action="store_true")
    ap.add_argument("--slots", type=int, default=0)
    ap.add_argument("--wrong-fraction", type=float, default=None)
    ap.add_argument("--profile-trace")
    ap.add_argument("--profile-lose", type=int, default=0)
    ap.add_argument("--reasoning-tokens", type=int, default=0)
    ap.add_argument("--spec-decode", type=lambda v: tuple(int(x) for x in v.split(",")), default=None)
    a = ap.parse_args(argv)
    stub = TimedStreamServer(a.ttft_ms / 1e3, a.itl_ms / 1e3, a.model, a.words_are_tokens, a.log,
                             None if a.prefill_ms_per_token is None else a.prefill_ms_per_token / 1e3, a.chat, a.slots,
                             a.wrong_fraction)
    stub.profile_trace, stub.profile_lose = a.profile_trace, a.profile_lose
    stub.reasoning_tokens, stub.spec_decode = a.reasoning_tokens, a.spec_decode
    server = await asyncio.start_server(stub.serve_connection, "127.0.0.1", a.port, backlog=1024)
    print(f"port {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
