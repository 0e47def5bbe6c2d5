"""NoopConnector: a vLLM KV connector that moves nothing, for `bench/vllm-pd.sh --prefill --fleets noop`.

It takes every hook vLLM calls on a connector and does no work in any of them, and hands out a
`kv_transfer_params` that names no KV. With it, vLLM runs its own KV-connector machinery (the connector
metadata built and sent to the worker each step, the worker's connector calls, a request's finish passing
through the connector) and nothing else: the floor any connector pays inside vLLM, so the prefill bench can
tell vLLM's connector cost from what the pd-connector plugin adds on top. Never a fleet's connector: a decoder
handed these params has nothing to read.
"""

from __future__ import annotations

from typing import Any

from vllm.distributed.kv_transfer.kv_connector.v1.base import (
    KVConnectorBase_V1,
    KVConnectorMetadata,
)


class NoopConnector(KVConnectorBase_V1):

    # ---- worker side: nothing to register, load or save ----

    def register_kv_caches(self, kv_caches):
        return

    def start_load_kv(self, forward_context, **kwargs: Any) -> None:
        return

    def wait_for_layer_load(self, layer_name: str) -> None:
        return

    def save_kv_layer(self, layer_name, kv_layer, attn_metadata, **kwargs: Any) -> None:
        return

    def wait_for_save(self):
        return

    # ---- scheduler side: no external tokens, no held blocks ----

    def get_num_new_matched_tokens(self, request, num_computed_tokens: int):
        return 0, False

    def update_state_after_alloc(self, request, blocks, num_external_tokens: int):
        return

    def build_connector_meta(self, scheduler_output) -> KVConnectorMetadata:
        return KVConnectorMetadata()

    def request_finished(self, request, block_ids: list[int]):
        # Params shaped like a P's answer, so the server's reply path is the one a real connector takes.
        return False, {"do_remote_prefill": True, "noop": True}
