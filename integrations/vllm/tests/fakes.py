"""Stand-ins for vLLM's request and for pd-connector, for the scheduler and worker decisions."""

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from pd_connector_vllm.client import PdError


class Status(Enum):
    RUNNING = 1
    FINISHED_STOPPED = 2
    FINISHED_LENGTH_CAPPED = 3
    FINISHED_ABORTED = 4


@dataclass
class FakeRequest:
    request_id: str
    prompt_token_ids: list[int]
    kv_transfer_params: dict[str, Any] | None
    num_computed_tokens: int = 0
    status: Status = Status.RUNNING

    @property
    def num_prompt_tokens(self) -> int:
        return len(self.prompt_token_ids)


@dataclass
class FakeClient:
    """Records every call; answers from ``answers`` (a PdError in it is raised)."""

    answers: dict[str, Any] = field(default_factory=dict)
    calls: list[tuple] = field(default_factory=list)

    def _answer(self, name, *args):
        self.calls.append((name, *args))
        a = self.answers.get(name)
        if isinstance(a, PdError):
            raise a
        return a(*args) if callable(a) else a

    def reserve(self, request_id, num_tokens):
        return self._answer("reserve", request_id, num_tokens)

    def finish(self, request_id):
        return self._answer("finish", request_id)

    def abort(self, request_id):
        return self._answer("abort", request_id)

    def pull(self, request_id, token_ids, params, decode_rank):
        return self._answer("pull", request_id, list(token_ids), params, decode_rank)

    def release(self, request_id, decode_rank):
        return self._answer("release", request_id, decode_rank)

    def batch(self, body):
        return self._answer("batch", body)

    def batches_pulls(self):
        return False   # one call per pull and release; the batched channel is EngineSocket's (test_loading.py)

    def kv_layout(self):
        return self._answer("kv_layout")

    def close(self):
        self.calls.append(("close",))

    def names(self):
        return [c[0] for c in self.calls]
