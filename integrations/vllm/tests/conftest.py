import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))

import socket  # noqa: E402

import pytest  # noqa: E402

from engine_socket_server import FakeEngineSocket  # noqa: E402


@pytest.fixture
def engine(tmp_path):
    """A fake engine socket answering scripted replies and recording what it was sent."""
    server = FakeEngineSocket(tmp_path / "pd-d0.sock")
    yield server
    server.stop()


@pytest.fixture
def dead_http():
    """An HTTP address that refuses every connection (bound, never listening): a call that went over HTTP
    fails there as unreachable."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{s.getsockname()[1]}"
