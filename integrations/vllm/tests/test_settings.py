"""kv_connector_extra_config: what the plugin needs is named when missing or wrong."""

import logging

import pytest

from pd_connector_vllm.connector import PdSettings


def test_defaults_and_the_url():
    s = PdSettings.from_extra({"pd_url": "http://127.0.0.1:8081"})
    assert (s.url, s.token, s.http_timeout_s, s.pull_timeout_s, s.connect_timeout_s, s.load_threads) == (
        "http://127.0.0.1:8081", None, 10.0, 150.0, 60.0, 8)
    assert s.timing_level() == logging.DEBUG
    assert PdSettings.from_extra({"pd_url": "http://x:1", "pd_log_timings": True}).timing_level() == logging.INFO


def test_without_pd_url_start_up_fails_saying_what_to_set():
    with pytest.raises(ValueError, match="kv_connector_extra_config.pd_url"):
        PdSettings.from_extra({})


@pytest.mark.parametrize("key", ["pd_http_timeout_s", "pd_pull_timeout_s", "pd_connect_timeout_s", "pd_load_threads"])
def test_a_non_positive_deadline_or_thread_count_is_refused(key):
    with pytest.raises(ValueError, match=key):
        PdSettings.from_extra({"pd_url": "http://127.0.0.1:8081", key: 0})


def test_the_engine_token_comes_from_the_config_or_the_environment(monkeypatch):
    monkeypatch.setenv("PD_ENGINE_TOKEN", "from-the-environment-0123")
    assert PdSettings.from_extra({"pd_url": "http://x:1"}).token == "from-the-environment-0123"
    assert PdSettings.from_extra({"pd_url": "http://x:1", "pd_token": "in-the-config-0123456"}).token == \
        "in-the-config-0123456"


def test_a_url_that_is_not_http_is_refused():
    with pytest.raises(ValueError, match="pd_url"):
        PdSettings.from_extra({"pd_url": "127.0.0.1:8081"}).client()
