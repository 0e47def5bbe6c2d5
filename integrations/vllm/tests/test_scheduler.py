"""The scheduler side's decisions: when P reserves, what it saves, what request_finished returns;
what D loads, into which blocks, and that each pull happens once."""

from pd_connector_vllm.client import PdError
from pd_connector_vllm.params import pd_request_id
from pd_connector_vllm.scheduler import PdScheduler

from fakes import FakeClient, FakeRequest, Status

BS = 4
PD_PARAMS = {"do_remote_prefill": True, "do_remote_decode": False, "remote_engine_id": "p0",
             "remote_request_id": "r-p", "remote_block_ids": [7, 8, 9], "remote_host": "127.0.0.1",
             "remote_port": 8081, "tp_size": 1, "remote_num_tokens": 10, "transfer_mode": "pull",
             "remote_lease_slot": 3, "remote_lease_nonce": 123456789, "some_future_field": {"x": 1}}


def reservation(request_id, num_tokens):
    return {"request_id": request_id, "num_tokens": num_tokens, "block_ids": [40, 41, 42], "has_lease": True,
            "block_bytes": 64, "upload_bytes": 192,
            "ranks": [{"rank": 0, "kv_file": "/dev/shm/pd-p0-r0.kv", "region_bytes": 6400}]}


def p_request(n=10):
    return FakeRequest("cmpl-1-0-abcd", list(range(n)), {"do_remote_decode": True, "do_remote_prefill": False})


def producer():
    client = FakeClient({"reserve": reservation, "finish": lambda rid: {"kv_transfer_params": dict(PD_PARAMS)}})
    return PdScheduler(client, BS), client


def test_p_reserves_and_saves_in_the_step_that_computes_the_prompts_last_token_only():
    s, client = producer()
    req = p_request(10)
    s.update_state_after_alloc(req, [5, 6, 1, 9], [], 0)
    blocks = lambda rid: [5, 6, 1, 9]                       # noqa: E731 - one more block than the prompt needs
    assert s.build_plan({req.request_id: 8}, blocks).saves == []   # chunked prefill: 8 of 10 tokens
    req.num_computed_tokens = 8
    plan = s.build_plan({req.request_id: 2}, blocks)
    assert client.calls == [("reserve", req.request_id, 10)]
    (save,) = plan.saves
    assert save.vllm_blocks == [5, 6, 1] and save.pd_blocks == [40, 41, 42] and save.num_tokens == 10
    assert save.rank_files == [("/dev/shm/pd-p0-r0.kv", 6400)]
    req.num_computed_tokens = 10
    assert s.build_plan({req.request_id: 1}, blocks).saves == []   # decoding on P: saved once
    assert client.names() == ["reserve"]


def test_p_finish_returns_pd_connectors_params_verbatim_and_lets_vllm_free_its_blocks():
    s, client = producer()
    req = p_request()
    s.update_state_after_alloc(req, [1, 2, 3], [], 0)
    s.build_plan({req.request_id: 10}, lambda rid: [1, 2, 3])
    req.status = Status.FINISHED_LENGTH_CAPPED
    delay_free, params = s.request_finished(req)
    assert delay_free is False
    assert params == PD_PARAMS
    assert client.names() == ["reserve", "finish"]


def test_p_request_aborted_after_its_reservation_gives_it_back_and_returns_no_params():
    s, client = producer()
    req = p_request()
    s.update_state_after_alloc(req, [1, 2, 3], [], 0)
    s.build_plan({req.request_id: 10}, lambda rid: [1, 2, 3])
    req.status = Status.FINISHED_ABORTED
    assert s.request_finished(req) == (False, None)
    assert client.calls[-1] == ("abort", req.request_id)


def test_p_request_aborted_before_its_prefill_completed_calls_nothing():
    s, client = producer()
    req = p_request()
    s.update_state_after_alloc(req, [1, 2, 3], [], 0)
    s.build_plan({req.request_id: 4}, lambda rid: [1, 2, 3])
    req.status = Status.FINISHED_ABORTED
    assert s.request_finished(req) == (False, None)
    assert client.calls == []


def test_p_reservation_refused_means_no_save_no_finish_and_no_params():
    s, client = producer()
    client.answers["reserve"] = PdError(503, "no-free-blocks", "full")
    req = p_request()
    s.update_state_after_alloc(req, [1, 2, 3], [], 0)
    assert s.build_plan({req.request_id: 10}, lambda rid: [1, 2, 3]).saves == []
    req.status = Status.FINISHED_STOPPED
    assert s.request_finished(req) == (False, None)
    assert client.names() == ["reserve"]


def test_p_finish_refused_aborts_and_returns_no_params():
    s, client = producer()
    client.answers["finish"] = PdError(409, "wrong-state", "finished already")
    req = p_request()
    s.update_state_after_alloc(req, [1, 2, 3], [], 0)
    s.build_plan({req.request_id: 10}, lambda rid: [1, 2, 3])
    req.status = Status.FINISHED_STOPPED
    assert s.request_finished(req) == (False, None)
    assert client.names() == ["reserve", "finish", "abort"]


def test_a_request_id_pd_connector_cannot_carry_is_replaced_by_a_stable_digest():
    assert pd_request_id("cmpl-abc-0-1234") == "cmpl-abc-0-1234"
    odd = pd_request_id("a:b,c")
    assert odd.startswith("vllm-") and ":" not in odd and odd == pd_request_id("a:b,c")
    assert pd_request_id("HB") != "HB" and pd_request_id("x" * 300) != "x" * 300


def d_request(prompt_len=10, params=None):
    return FakeRequest("cmpl-2-0-ef01", list(range(100, 100 + prompt_len)),
                       dict(PD_PARAMS if params is None else params))


def test_d_loads_every_prompt_token_not_computed_locally_asynchronously():
    s = PdScheduler(FakeClient(), BS)
    req = d_request(10)
    assert s.get_num_new_matched_tokens(req, 0) == (10, True)
    assert s.get_num_new_matched_tokens(req, 8) == (2, True)
    assert s.get_num_new_matched_tokens(d_request(10, {"do_remote_prefill": True}), 0) == (0, False)
    assert s.get_num_new_matched_tokens(FakeRequest("x", [1, 2], None), 0) == (0, False)


def test_d_plans_one_pull_with_ps_params_verbatim_into_the_blocks_a_prefix_hit_left_empty():
    s = PdScheduler(FakeClient(), BS)
    req = d_request(10)
    s.update_state_after_alloc(req, [3, 4, 11], [11], 2)   # blocks 3, 4 came from D's prefix cache
    plan = s.build_plan({}, lambda rid: [])
    (load,) = plan.loads
    assert load.pd_request_id == req.request_id and load.token_ids == req.prompt_token_ids
    assert load.params == PD_PARAMS
    assert load.vllm_blocks == [11] and load.first_pd_block == 2
    assert req.kv_transfer_params["do_remote_prefill"] is False    # a preempted request does not pull again
    assert s.get_num_new_matched_tokens(req, 0) == (0, False)
    assert s.build_plan({}, lambda rid: []).loads == []


def test_d_request_that_ends_before_its_load_is_planned_still_releases_ps_lease():
    s = PdScheduler(FakeClient(), BS)
    req = d_request(10)
    req.status = Status.FINISHED_ABORTED
    assert s.request_finished(req) == (False, None)
    (release,) = s.build_plan({}, lambda rid: []).releases
    assert release.params == PD_PARAMS and release.vllm_blocks == []
    assert s.request_finished(req) == (False, None)
    assert s.build_plan({}, lambda rid: []).releases == []
