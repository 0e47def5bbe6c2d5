"""The unmodified OpenAI Python client (from PyPI) against a pd-connector router.

Sends completions and chat, streamed and not, to the router, and the same prompts to a reference
instance (role both, no transfer); every routed answer must equal the reference's word for word.
The reference engine's answer is drawn from the KV the decoder used, so equal answers mean D
decoded from P's KV of the same prompt. Both URLs must be on 127.0.0.1.
Usage: router_openai_client.py ROUTER_URL REFERENCE_URL
Prints one line per check and closes with "N passed, M failed"; exits non-zero on a failure.
"""
import sys
from urllib.parse import urlparse

from openai import OpenAI

MODEL = "pd-connector-reference"
PROMPTS = [
    "Explain KV cache transfer in one line",
    "the quick brown fox jumps over the lazy dog " * 3,
    "disaggregated prefill moves the cache from one engine to another before decode starts",
]
MAX_TOKENS = 12


def client(url):
    host = urlparse(url).hostname
    if host != "127.0.0.1" and host != "localhost":
        raise SystemExit(f"refusing {url}: tests send traffic to loopback only")
    return OpenAI(base_url=url.rstrip("/") + "/v1", api_key="unused", max_retries=0, timeout=60)


def completion(c, prompt, stream):
    if not stream:
        return c.completions.create(model=MODEL, prompt=prompt, max_tokens=MAX_TOKENS).choices[0].text
    pieces = c.completions.create(model=MODEL, prompt=prompt, max_tokens=MAX_TOKENS, stream=True)
    return "".join(chunk.choices[0].text for chunk in pieces if chunk.choices)


def chat(c, prompt, stream):
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": prompt}]
    if not stream:
        return c.chat.completions.create(model=MODEL, messages=messages, max_tokens=MAX_TOKENS) \
            .choices[0].message.content
    pieces = c.chat.completions.create(model=MODEL, messages=messages, max_tokens=MAX_TOKENS, stream=True,
                                       stream_options={"include_usage": True})
    return "".join(chunk.choices[0].delta.content or "" for chunk in pieces if chunk.choices)


def main(argv):
    if len(argv) != 3:
        raise SystemExit(__doc__)
    router, reference = client(argv[1]), client(argv[2])
    passed = failed = 0

    def check(name, got, expected):
        nonlocal passed, failed
        ok = got == expected and bool(expected)
        passed += ok
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {got!r}" + ("" if ok else f" != reference {expected!r}"))

    models = [m.id for m in router.models.list().data]
    check("models.list through the router", models, [m.id for m in reference.models.list().data])
    for i, prompt in enumerate(PROMPTS):
        for kind, call in (("completion", completion), ("chat", chat)):
            expected = call(reference, prompt, False)
            for stream in (False, True):
                check(f"{kind} prompt {i} stream={stream}", call(router, prompt, stream), expected)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
