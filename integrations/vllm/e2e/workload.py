"""What the end-to-end tests ask: fixed prompts, the OpenAI client's four ways of asking, and the seed's reproducer
legs sent to P and D by hand (what a router does, with a pause and a flood in between).

Every answer is greedy (temperature 0) with a fixed length (ignore_eos), so two engines with the same weights
and the same KV answer the same text; a decode from other KV answers another one.
"""
from __future__ import annotations

import json
import random
import threading
import time
import zlib
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Callable

import openai

from pd_proxy import decode_body, prefill_body

MODEL = "tiny"
ANSWER_TOKENS = 16
VOCAB = 512
# The model's vocabulary (make-tiny-model.py): gpt-oss's, above pd-connector's own (the reference engine's) 151,936.
MODEL_VOCAB = 201_088
REFERENCE_VOCAB = 151_936
FIRST_ORDINARY_TOKEN = 3  # 0-2 are the special tokens (make-tiny-model.py)
LEG_TIMEOUT_S = 120.0
# The reproducer's P has 8 KV blocks (x 128 tokens): a flood of 300-token prefills reuses every block in a few requests.
P_BLOCKS = 8
# How long a pd-connector P may take, past a lease's expiry, to report it ended: its reaper sweeps every lease
# in every step of its loop (an idle loop parks 1 ms at most); this allows for two busy cores and the status call.
LEASE_REAPED_S = 5.0


def token_prompt(seed: int, length: int) -> list[int]:
    """A prompt of exactly `length` tokens (completions take token ids), different for every seed."""
    rng = random.Random(seed)
    return [rng.randrange(FIRST_ORDINARY_TOKEN, VOCAB) for _ in range(length)]


@dataclass(frozen=True)
class Case:
    name: str
    chat: bool
    stream: bool
    prompt: object  # text or token ids (completions), or a message text (chat)


def _text(seed: int, words: int) -> str:
    rng = random.Random(seed)
    vocabulary = ("cache block lease nonce slot prefill decode engine router token layer value key river "
                  "mountain garden window orange silver market winter morning quiet bright paper stone").split()
    return " ".join(rng.choice(vocabulary) for _ in range(words))


def equality_cases() -> list[Case]:
    """Completions and chat, streamed and not; short prompts (less than one 128-token block: D computes them
    itself) and long ones (several blocks: D's KV comes from P)."""
    cases = []
    for stream in (False, True):
        tag = "stream" if stream else "plain"
        cases.append(Case(f"completion-short-{tag}", False, stream, _text(100 + stream, 12)))
        cases.append(Case(f"completion-300-{tag}", False, stream, token_prompt(200 + stream, 300)))
        cases.append(Case(f"completion-700-{tag}", False, stream, token_prompt(300 + stream, 700)))
        cases.append(Case(f"chat-short-{tag}", True, stream, _text(400 + stream, 10)))
        cases.append(Case(f"chat-long-{tag}", True, stream, _text(500 + stream, 260)))
    cases.append(Case("completion-large-vocabulary-plain", False, False, large_vocabulary_prompt(600, 300)))
    return cases


def large_vocabulary_prompt(seed: int, length: int) -> list[int]:
    """A prompt of `length` token ids, most of them above 151,935: ids a gpt-oss prompt has and pd-connector's
    reference engine does not know."""
    rng = random.Random(seed)
    return [rng.randrange(REFERENCE_VOCAB, MODEL_VOCAB) if i % 4 else rng.randrange(FIRST_ORDINARY_TOKEN, VOCAB)
            for i in range(length)]


def client(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url + "/v1", api_key="unused", timeout=LEG_TIMEOUT_S, max_retries=0)


def ask(c: openai.OpenAI, case: Case, max_tokens: int = ANSWER_TOKENS, cache_salt: str | None = None) -> str:
    """The answer text the OpenAI client sees (a stream's deltas joined). ``cache_salt`` (vLLM's): the request
    shares prefix-cache blocks only with requests of the same salt."""
    common = dict(model=MODEL, max_tokens=max_tokens, temperature=0, stream=case.stream,
                  extra_body={"ignore_eos": True, **({"cache_salt": cache_salt} if cache_salt else {})})
    if case.chat:
        r = c.chat.completions.create(messages=[{"role": "user", "content": case.prompt}], **common)
        if case.stream:
            return "".join(chunk.choices[0].delta.content or "" for chunk in r if chunk.choices)
        return r.choices[0].message.content
    r = c.completions.create(prompt=case.prompt, **common)
    if case.stream:
        return "".join(chunk.choices[0].text for chunk in r if chunk.choices)
    return r.choices[0].text


# ---- the reproducer's legs, sent by hand to P and D (the proxy's own leg bodies) ----

def _post(url: str, body: dict, request_id: str) -> tuple[int, dict]:
    data = json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="POST",
                                 headers={"Content-Type": "application/json", "X-Request-Id": request_id})
    try:
        with urllib.request.urlopen(req, timeout=LEG_TIMEOUT_S) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw)
        except json.JSONDecodeError:
            return e.code, {"raw": raw.decode(errors="replace")}


def completion_body(prompt, max_tokens: int = ANSWER_TOKENS) -> dict:
    return {"model": MODEL, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True}


def prefill_on_p(p_url: str, prompt, request_id: str) -> dict:
    """The router's P leg; returns P's kv_transfer_params (what a router saves for D)."""
    status, answer = _post(p_url + "/v1/completions", prefill_body(completion_body(prompt)), request_id)
    if status != 200 or not answer.get("kv_transfer_params"):
        raise AssertionError(f"P leg of {request_id}: HTTP {status}, {answer}")
    return answer


def decode_on_d(d_url: str, prompt, p_answer: dict, request_id: str) -> tuple[int, dict]:
    """The router's D leg with P's params verbatim; (status, body)."""
    return _post(d_url + "/v1/completions", decode_body(completion_body(prompt), p_answer), request_id)


def answer_text(body: dict) -> str | None:
    choices = body.get("choices") or []
    return choices[0].get("text") if choices else None


@dataclass
class Reproducer:
    """The seed's reproducer: P prefills a multi-block prompt for a remote decode; nobody reads it while its lease
    runs out; a flood of other remote-decode prefills takes P's (few) blocks; then D reads with the saved params.

    `p_leases` counts the leases P holds (the plugin's P: its pd-connector's `leases_live`), so the wait for a lease
    to run out waits for P to have let it go. Stock vLLM has no lease state to ask: its lease is the deadline P set
    when it finished the request, before it answered, so it has run out `lease_s` after the answer."""
    lease_s: float
    flood: int = 8
    flood_seed: int = 9000
    prompt_tokens: int = 300
    p_leases: Callable[[], int] | None = None

    def wait_past_lease(self, answered_at: float) -> None:
        """Until every lease P exported, the last of them answered at `answered_at` (time.monotonic()), ran out."""
        if self.p_leases is None:
            left = answered_at + self.lease_s - time.monotonic()
            if left > 0:
                time.sleep(left)
            return
        deadline_s = self.lease_s + LEASE_REAPED_S
        deadline = answered_at + deadline_s
        held = self.p_leases()
        while held > 0:
            if time.monotonic() > deadline:
                raise AssertionError(f"P still holds {held} lease(s) {deadline_s:.0f} s after the last was exported "
                                     f"(a {self.lease_s} s lease, then P's reaper): nobody read them, they must have "
                                     "expired")
            time.sleep(0.1)
            held = self.p_leases()

    def flood_p(self, p_url: str, tag: str) -> int:
        """Other remote-decode prefills that nobody reads; returns how many P exported. A P out of blocks may
        answer one without kv_transfer_params (the plugin's P when its pd-connector is full): still a 200."""
        exported = 0
        for i in range(self.flood):
            prompt = token_prompt(self.flood_seed + 97 * i + zlib.crc32(tag.encode()) % 1000, self.prompt_tokens)
            status, answer = _post(p_url + "/v1/completions", prefill_body(completion_body(prompt)), f"{tag}-flood-{i}")
            if status != 200:
                raise AssertionError(f"flood P leg {i} of {tag}: HTTP {status}, {answer}")
            exported += bool(answer.get("kv_transfer_params"))
        if exported == 0:
            raise AssertionError(f"no flood P leg of {tag} exported KV: the flood reused none of P's blocks")
        return exported

    def run(self, p_url: str, d_url: str, prompt, request_id: str) -> tuple[int, dict]:
        saved = prefill_on_p(p_url, prompt, request_id)
        self.wait_past_lease(time.monotonic())
        self.flood_p(p_url, request_id)
        self.wait_past_lease(time.monotonic())
        return decode_on_d(d_url, prompt, saved, request_id)


def read_both(d_url, late, second):
    """The late reader of attempt 1 and attempt 2's reader, at (almost) the same time: attempt 2's lease is as short
    as attempt 1's and must not run out while the late read is decoded."""
    results = {}

    def read(key, prompt, p_answer, request_id):
        results[key] = decode_on_d(d_url, prompt, p_answer, request_id)

    threads = [threading.Thread(target=read, args=("late", *late)),
               threading.Thread(target=read, args=("second", *second))]
    threads[0].start()
    time.sleep(0.2)
    threads[1].start()
    for t in threads:
        t.join(180)
    assert not any(t.is_alive() for t in threads), "a D leg did not answer within 180 s"
    return results["late"], results["second"]


def reuse(p_url, d_url, reproducer, prefix, prompts):
    """Attempt 1 of request id R prefills; nobody reads it in time; a flood; attempt 2 of R prefills another prompt;
    then attempt 1's late reader and attempt 2's reader go to D."""
    request_id = f"{prefix}-reused-id"
    one, two = prompts
    first = prefill_on_p(p_url, one, request_id)
    reproducer.wait_past_lease(time.monotonic())
    reproducer.flood_p(p_url, request_id)
    reproducer.wait_past_lease(time.monotonic())
    second = prefill_on_p(p_url, two, request_id)
    return read_both(d_url, (one, first, request_id), (two, second, request_id))
