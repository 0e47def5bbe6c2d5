"""kv_connector_extra_config: what the plugin needs is named when missing or wrong."""

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

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


@pytest.mark.parametrize("key", ["pd_http_timeout_s", "pd_pull_timeout_s", "pd_connect_timeout_s", "pd_load_threads",
                                 "pd_save_timeout_s"])
def test_a_non_positive_deadline_or_thread_count_is_refused(key):
    with pytest.raises(ValueError, match=key):
        PdSettings.from_extra({"pd_url": "http://127.0.0.1:8081", key: 0})


@pytest.mark.parametrize("value, overlap", [(True, True), ("true", True), ("1", True), (False, False), ("no", False)])
def test_p_copies_in_the_step_unless_told_to_copy_beside_the_forward(value, overlap):
    s = PdSettings.from_extra({"pd_url": "http://x:1"})
    assert (s.save_overlap, s.save_timeout_s) == (False, 30.0)
    assert PdSettings.from_extra({"pd_url": "http://x:1", "pd_save_overlap": value}).save_overlap is overlap


@pytest.mark.parametrize("key", ["pd_save_overlap", "pd_log_timings"])
def test_a_flag_that_is_neither_true_nor_false_is_refused_naming_it(key):
    with pytest.raises(ValueError, match=f"kv_connector_extra_config.{key} must be true or false, got 'treu'"):
        PdSettings.from_extra({"pd_url": "http://x:1", key: "treu"})


def test_the_engine_token_comes_from_the_config_or_the_environment(monkeypatch):
    monkeypatch.setenv("PD_ENGINE_TOKEN", "from-the-environment-0123")
    assert PdSettings.from_extra({"pd_url": "http://x:1"}).token == "from-the-environment-0123"
    assert PdSettings.from_extra({"pd_url": "http://x:1", "pd_token": "in-the-config-0123456"}).token == \
        "in-the-config-0123456"


@pytest.mark.parametrize("channel", ["auto", "socket", "http"])
def test_the_engine_channel_is_auto_unless_set(channel):
    assert PdSettings.from_extra({"pd_url": "http://x:1"}).engine_channel == "auto"
    assert PdSettings.from_extra({"pd_url": "http://x:1", "pd_engine_channel": channel}).engine_channel == channel


@pytest.mark.parametrize("channel", ["unix", "Socket", "", None])
def test_any_other_engine_channel_is_refused_naming_the_setting(channel):
    with pytest.raises(ValueError, match="kv_connector_extra_config.pd_engine_channel must be one of auto, socket, "
                                         "http"):
        PdSettings.from_extra({"pd_url": "http://x:1", "pd_engine_channel": channel})


def test_a_url_that_is_not_http_is_refused():
    with pytest.raises(ValueError, match="pd_url"):
        PdSettings.from_extra({"pd_url": "127.0.0.1:8081"}).client()


@pytest.fixture
def recorder():
    """A loopback stand-in for pd-connector that answers ``{}`` and keeps every Authorization header it got."""
    headers = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            headers.append(self.headers.get("Authorization"))
            body = json.dumps({}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    server.headers = headers
    server.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield server
    server.shutdown()
    server.server_close()
    thread.join(5)
    assert not thread.is_alive()


def sent_authorization(recorder, extra):
    client = PdSettings.from_extra({"pd_url": recorder.url, "pd_http_timeout_s": 5, **extra}).client()
    try:
        client.kv_layout()
    finally:
        client.close()
    assert len(recorder.headers) == 1
    return recorder.headers[0]


@pytest.mark.parametrize("rotation", ["tok-new-0123456789,tok-old-0123456789",
                                      "  tok-new-0123456789 , tok-old-0123456789 ",
                                      "tok-new-0123456789"])
def test_during_a_rotation_the_environment_token_list_sends_its_first_token(monkeypatch, recorder, rotation):
    """k8s gives PD_ENGINE_TOKEN the service's own PD_AUTH_TOKENS_ENGINE, which is ``new,old`` while tokens
    rotate: the plugin presents the first one, as the service's own clients do, never the whole list."""
    monkeypatch.setenv("PD_ENGINE_TOKEN", rotation)
    assert sent_authorization(recorder, {}) == "Bearer tok-new-0123456789"


def test_during_a_rotation_a_pd_token_list_in_the_config_sends_its_first_token(monkeypatch, recorder):
    monkeypatch.setenv("PD_ENGINE_TOKEN", "from-the-environment-0123")
    extra = {"pd_token": " tok-new-0123456789,tok-old-0123456789"}
    assert sent_authorization(recorder, extra) == "Bearer tok-new-0123456789"


@pytest.mark.parametrize("rotation", [",tok-old-0123456789", " , ", " "])
def test_a_token_list_whose_first_entry_is_empty_is_refused_at_start_naming_the_setting(monkeypatch, rotation):
    monkeypatch.setenv("PD_ENGINE_TOKEN", rotation)
    with pytest.raises(ValueError, match="PD_ENGINE_TOKEN") as e:
        PdSettings.from_extra({"pd_url": "http://127.0.0.1:8081"})
    assert "tok-old" not in str(e.value)   # a token never goes into a message: it ends up in logs
    monkeypatch.delenv("PD_ENGINE_TOKEN")
    with pytest.raises(ValueError, match="kv_connector_extra_config.pd_token"):
        PdSettings.from_extra({"pd_url": "http://127.0.0.1:8081", "pd_token": rotation})


def test_no_token_anywhere_sends_no_authorization(monkeypatch, recorder):
    monkeypatch.delenv("PD_ENGINE_TOKEN", raising=False)
    assert sent_authorization(recorder, {}) is None
