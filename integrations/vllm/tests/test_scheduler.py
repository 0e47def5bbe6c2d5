"""The scheduler side's decisions: when P reserves, what it saves, what request_finished returns;
what D loads, into which blocks, and that each pull happens once."""

import logging
import time

from pd_connector_vllm import timing_lines
from pd_connector_vllm.control import Bound, Grant
from pd_connector_vllm.params import pd_request_id
from pd_connector_vllm.scheduler import PdScheduler

from fakes import FakeRequest, Status

BS = 4
PD_PARAMS = {"do_remote_prefill": True, "do_remote_decode": False, "remote_engine_id": "p0",
             "remote_request_id": "r-p", "remote_block_ids": [7, 8, 9], "remote_host": "127.0.0.1",
             "remote_port": 8081, "tp_size": 1, "remote_num_tokens": 10, "transfer_mode": "pull",
             "remote_lease_slot": 3, "remote_lease_nonce": 123456789, "some_future_field": {"x": 1}}


class FakeControl:
    """control.PdControl's scheduler-thread face: records what the scheduler takes, commits and gives back."""

    def __init__(self, credit=True, usable=True):
        self.credit = credit
        self._usable = usable
        self.calls = []
        self.grant = Grant("g1-1", [], [], [("/dev/shm/pd-p0-r0.kv", 6400)], {"remote_engine_id": "p0"}, 0, 0)

    def take(self, n):
        self.calls.append(("take", n))
        return Bound(self.grant, [40 + i for i in range(n)], 3, 123456789) if self.credit else None

    def usable(self, bound):
        return self._usable

    def params(self, bound, pd_id, n):
        return {"remote_engine_id": "p0", "remote_request_id": pd_id, "remote_block_ids": [bound.blocks],
                "remote_num_tokens": n, "remote_lease_slot": bound.slot, "remote_lease_nonce": bound.nonce}

    def commit(self, bound, pd_id, n):
        self.calls.append(("commit", pd_id, n, tuple(bound.blocks)))

    def give_back(self, bound):
        self.calls.append(("give_back", tuple(bound.blocks)))

    def names(self):
        return [c[0] for c in self.calls]


def p_request(n=10):
    return FakeRequest("cmpl-1-0-abcd", list(range(n)), {"do_remote_decode": True, "do_remote_prefill": False})


def producer(**kw):
    control = FakeControl(**kw)
    return PdScheduler(control, BS), control


def test_p_takes_granted_blocks_and_saves_in_the_step_that_computes_the_prompts_last_token_only():
    s, control = producer()
    req = p_request(10)
    s.update_state_after_alloc(req, [5, 6, 1, 9], [], 0)
    blocks = lambda rid: [5, 6, 1, 9]                       # noqa: E731 - one more block than the prompt needs
    assert s.build_plan({req.request_id: 8}, blocks).saves == []   # chunked prefill: 8 of 10 tokens
    assert control.calls == [], "nothing is taken before the step that completes the prompt"
    req.num_computed_tokens = 8
    plan = s.build_plan({req.request_id: 2}, blocks)
    assert control.calls == [("take", 3)]
    (save,) = plan.saves
    assert save.vllm_blocks == [5, 6, 1] and save.pd_blocks == [40, 41, 42] and save.num_tokens == 10
    assert save.rank_files == [("/dev/shm/pd-p0-r0.kv", 6400)] and save.grant_id == "g1-1"
    req.num_computed_tokens = 10
    assert s.build_plan({req.request_id: 1}, blocks).saves == []   # decoding on P: saved once
    assert control.names() == ["take"]


def test_p_request_finished_hands_out_the_grants_params_queues_the_commit_and_lets_vllm_free_its_blocks():
    s, control = producer()
    req = p_request()
    s.update_state_after_alloc(req, [1, 2, 3], [], 0)
    s.build_plan({req.request_id: 10}, lambda rid: [1, 2, 3])
    req.status = Status.FINISHED_LENGTH_CAPPED
    delay_free, params = s.request_finished(req)
    assert delay_free is False
    assert params == {"remote_engine_id": "p0", "remote_request_id": req.request_id, "remote_block_ids": [[40, 41, 42]],
                      "remote_num_tokens": 10, "remote_lease_slot": 3, "remote_lease_nonce": 123456789}
    assert control.calls[-1] == ("commit", req.request_id, 10, (40, 41, 42))


class SlowTake(FakeControl):
    """A take that holds the scheduler thread for 3 ms: the hook that takes the share is then the slow one."""

    def take(self, n):
        time.sleep(0.003)
        return super().take(n)


def test_each_p_requests_timing_line_splits_its_scheduler_thread_time_by_hook(caplog):
    control = SlowTake()
    s = PdScheduler(control, BS, timing_level=logging.INFO)
    req = p_request()
    assert s.get_num_new_matched_tokens(req, 0) == (0, False)   # takes its share (3 ms)
    s.update_state_after_alloc(req, [1, 2, 3], [], 0)
    s.build_plan({req.request_id: 10}, lambda rid: [1, 2, 3])
    req.status = Status.FINISHED_LENGTH_CAPPED
    with caplog.at_level(logging.INFO, logger="vllm.pd_connector"):
        assert s.request_finished(req)[1] is not None
    (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith(f"P request {req.request_id}:")]
    whole, split = timing_lines.SCHED_LINE.search(line), timing_lines.SCHED_SPLIT.search(line)  # as benches read it
    assert whole and split, line
    total = float(whole.group(2))
    share, alloc, plan, finish = (float(x) for x in split.groups())
    assert abs(share + alloc + plan + finish - total) <= 0.003, f"the hooks add up to the total: {line}"
    assert share >= 3.0, f"the slow take is counted in the share: {line}"


class SlowToCount(FakeRequest):
    """A request whose computed tokens take vLLM 2 ms to read: the step's plan, beyond any take, is slow."""

    @property
    def num_computed_tokens(self):
        time.sleep(0.002)
        return self._computed

    @num_computed_tokens.setter
    def num_computed_tokens(self, n):
        self._computed = n


def test_the_plan_of_a_step_that_only_schedules_a_chunk_of_the_prompt_counts_in_the_requests_time(caplog):
    s = PdScheduler(FakeControl(), BS, timing_level=logging.INFO)
    req = SlowToCount("cmpl-2-0-abcd", list(range(10)), {"do_remote_decode": True})
    assert s.get_num_new_matched_tokens(req, 0) == (0, False)
    s.update_state_after_alloc(req, [1, 2, 3], [], 0)
    assert s.build_plan({req.request_id: 8}, lambda rid: [1, 2, 3]).saves == []   # a chunk: no take
    req.num_computed_tokens = 8
    assert len(s.build_plan({req.request_id: 2}, lambda rid: [1, 2, 3]).saves) == 1
    req.num_computed_tokens, req.status = 10, Status.FINISHED_LENGTH_CAPPED
    with caplog.at_level(logging.INFO, logger="vllm.pd_connector"):
        assert s.request_finished(req)[1] is not None
    (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith(f"P request {req.request_id}:")]
    plan = float(timing_lines.SCHED_SPLIT.search(line).group(3))
    assert plan >= 4.0, f"both steps' plans (2 ms each reading the request) are the request's: {line}"


def test_p_request_aborted_after_its_save_gives_its_share_back_and_returns_no_params():
    s, control = producer()
    req = p_request()
    s.update_state_after_alloc(req, [1, 2, 3], [], 0)
    s.build_plan({req.request_id: 10}, lambda rid: [1, 2, 3])
    req.status = Status.FINISHED_ABORTED
    assert s.request_finished(req) == (False, None)
    assert control.names() == ["take", "give_back"]


def test_p_request_aborted_before_its_prefill_completed_takes_nothing():
    s, control = producer()
    req = p_request()
    s.update_state_after_alloc(req, [1, 2, 3], [], 0)
    s.build_plan({req.request_id: 4}, lambda rid: [1, 2, 3])
    req.status = Status.FINISHED_ABORTED
    assert s.request_finished(req) == (False, None)
    assert control.calls == []


def test_p_without_credit_saves_nothing_and_returns_no_params():
    s, control = producer(credit=False)
    req = p_request()
    s.update_state_after_alloc(req, [1, 2, 3], [], 0)
    assert s.build_plan({req.request_id: 10}, lambda rid: [1, 2, 3]).saves == []
    req.status = Status.FINISHED_STOPPED
    assert s.request_finished(req) == (False, None)
    assert control.names() == ["take"]


def test_p_finished_too_late_in_its_grants_life_hands_out_nothing():
    s, control = producer(usable=False)
    req = p_request()
    s.update_state_after_alloc(req, [1, 2, 3], [], 0)
    s.build_plan({req.request_id: 10}, lambda rid: [1, 2, 3])
    req.status = Status.FINISHED_STOPPED
    assert s.request_finished(req) == (False, None)
    assert control.names() == ["take", "give_back"]


class Clock:
    def __init__(self):
        self.now = 50.0

    def __call__(self):
        return self.now


def test_p_request_waits_unscheduled_for_its_share_of_the_grant_then_runs_with_it():
    control = FakeControl(credit=False)
    clock = Clock()
    s = PdScheduler(control, BS, credit_wait_s=10, clock=clock)
    req = p_request(10)
    assert s.get_num_new_matched_tokens(req, 0) == (None, False), "no share yet: vLLM keeps it waiting"
    clock.now += 1
    assert s.get_num_new_matched_tokens(req, 0) == (None, False)
    control.credit = True                                  # the control thread got P's freed blocks back
    assert s.get_num_new_matched_tokens(req, 0) == (0, False)
    assert s.get_num_new_matched_tokens(req, 0) == (0, False), "the share is taken once"
    s.update_state_after_alloc(req, [1, 2, 3], [], 0)
    (save,) = s.build_plan({req.request_id: 10}, lambda rid: [1, 2, 3]).saves
    assert save.pd_blocks == [40, 41, 42]
    req.status = Status.FINISHED_STOPPED
    assert s.request_finished(req)[1]["remote_block_ids"] == [[40, 41, 42]]
    assert control.names() == ["take", "take", "take", "commit"], "taken before scheduling, used at the save"


def test_p_request_that_waited_past_its_deadline_runs_without_params():
    control = FakeControl(credit=False)
    clock = Clock()
    s = PdScheduler(control, BS, credit_wait_s=10, clock=clock)
    req = p_request(10)
    assert s.get_num_new_matched_tokens(req, 0) == (None, False)
    clock.now += 10
    assert s.get_num_new_matched_tokens(req, 0) == (0, False), "past the deadline it is scheduled"
    s.update_state_after_alloc(req, [1, 2, 3], [], 0)
    assert s.build_plan({req.request_id: 10}, lambda rid: [1, 2, 3]).saves == []
    req.status = Status.FINISHED_STOPPED
    assert s.request_finished(req) == (False, None)


def test_p_request_aborted_while_waiting_gives_its_share_back():
    s, control = producer()
    req = p_request(10)
    assert s.get_num_new_matched_tokens(req, 0) == (0, False)
    req.status = Status.FINISHED_ABORTED
    assert s.request_finished(req) == (False, None)
    assert control.names() == ["take", "give_back"]


def test_p_beside_a_pd_connector_that_is_no_producer_hands_out_nothing():
    s = PdScheduler(None, BS)
    req = p_request()
    s.update_state_after_alloc(req, [1, 2, 3], [], 0)
    assert s.build_plan({req.request_id: 10}, lambda rid: [1, 2, 3]).saves == []
    req.status = Status.FINISHED_STOPPED
    assert s.request_finished(req) == (False, None)


def test_a_request_id_pd_connector_cannot_carry_is_replaced_by_a_stable_digest():
    assert pd_request_id("cmpl-abc-0-1234") == "cmpl-abc-0-1234"
    odd = pd_request_id("a:b,c")
    assert odd.startswith("vllm-") and ":" not in odd and odd == pd_request_id("a:b,c")
    assert pd_request_id("HB") != "HB" and pd_request_id("x" * 300) != "x" * 300


def d_request(prompt_len=10, params=None):
    return FakeRequest("cmpl-2-0-ef01", list(range(100, 100 + prompt_len)),
                       dict(PD_PARAMS if params is None else params))


def test_d_loads_every_prompt_token_not_computed_locally_asynchronously():
    s = PdScheduler(None, BS)
    req = d_request(10)
    assert s.get_num_new_matched_tokens(req, 0) == (10, True)
    assert s.get_num_new_matched_tokens(req, 8) == (2, True)
    assert s.get_num_new_matched_tokens(d_request(10, {"do_remote_prefill": True}), 0) == (0, False)
    assert s.get_num_new_matched_tokens(FakeRequest("x", [1, 2], None), 0) == (0, False)


def test_d_plans_one_pull_with_ps_params_verbatim_into_the_blocks_a_prefix_hit_left_empty():
    s = PdScheduler(None, BS)
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
    s = PdScheduler(None, BS)
    req = d_request(10)
    req.status = Status.FINISHED_ABORTED
    assert s.request_finished(req) == (False, None)
    (release,) = s.build_plan({}, lambda rid: []).releases
    assert release.params == PD_PARAMS and release.vllm_blocks == []
    assert s.request_finished(req) == (False, None)
    assert s.build_plan({}, lambda rid: []).releases == []


def test_with_a_window_group_beside_a_full_one_p_saves_each_groups_blocks_and_d_loads_them():
    """vLLM's hybrid manager: a sliding-window group (first) keeps a request's last blocks (here 2: its window's and
    one more), its older blocks are vLLM's null block (-1 here); the full group keeps all. P's save and D's load name
    each group's blocks, the window group's cut to its last 2 and aligned to the end of the pd blocks."""
    control = FakeControl()
    s = PdScheduler(control, BS, windows=[2, 0])
    assert s.grouped and s.full_group == 1
    req = p_request(14)   # 4 blocks of 4 tokens
    s.update_state_after_alloc(req, [], [], 0)
    groups = ([-1, -1, 12, 13, 14], [20, 21, 22, 23, 24])   # one block more than the prompt, as vLLM allocates
    (save,) = s.build_plan({req.request_id: 14}, lambda rid: groups).saves
    assert save.vllm_blocks == [20, 21, 22, 23] and save.pd_blocks == [40, 41, 42, 43]
    assert save.group_blocks == [[12, 13], [20, 21, 22, 23]]

    d = PdScheduler(None, BS, windows=[2, 0])
    dreq = FakeRequest("cmpl-2-0-abcd", list(range(14)), dict(PD_PARAMS))
    d.update_state_after_alloc(dreq, [30, 31, 32, 33], [31, 32, 33], 10, [[51, 52, 53], [31, 32, 33]])
    (load,) = d.build_plan({}, lambda rid: ()).loads
    assert load.vllm_blocks == [31, 32, 33] and load.first_pd_block == 1
    assert load.group_blocks == [[52, 53], [31, 32, 33]], "the window group's last 2 blocks, the full group's 3"
