"""A mapped KV file's pages are faulted in on a thread of their own (populate.py): copies after it fault no page,
an old kernel only costs the speed-up, and closing the files stops the threads."""

import errno
import logging
import os
import resource
import tempfile
import threading
import time

import pytest
import torch

from pd_connector_vllm import populate
from pd_connector_vllm.layout import KvFiles, PdGeometry

PAGE = os.sysconf("SC_PAGE_SIZE")
G = PdGeometry(layers=2, heads_per_rank=2, head_dim=64, block_tokens=128, dtype_bytes=2, tp_size=1,
               block_bytes=2 * 2 * 2 * 128 * 64 * 2)
BLOCKS = 256   # 32 MiB


@pytest.fixture
def kv_file():
    """A pd-connector-like KV file: in a tmpfs, its blocks allocated up front (posix_fallocate), never touched."""
    with tempfile.TemporaryDirectory(prefix="pd-populate-", dir="/dev/shm") as work:
        path = os.path.join(work, "pd-p-p0.kv")
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            os.posix_fallocate(fd, 0, BLOCKS * G.block_bytes)
        finally:
            os.close(fd)
        yield path


def populator_of(files: KvFiles, path: str) -> populate.Populator:
    return files.populator(path)


def faults_writing(tensor: torch.Tensor) -> int:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    tensor.fill_(1.0)
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def wait_done(p: populate.Populator, seconds: float = 30.0) -> None:
    assert p.wait(seconds), f"the populate did not finish within {seconds} s"


def test_after_the_populate_writing_every_block_faults_no_page_and_without_it_every_page_faults(kv_file):
    pages = BLOCKS * G.block_bytes // PAGE
    files = KvFiles()
    blocks = files.blocks(kv_file, BLOCKS * G.block_bytes, G, torch.bfloat16)
    wait_done(populator_of(files, kv_file))
    populated = faults_writing(blocks)
    files.close()

    unpopulated_files = KvFiles(populator=lambda *a: populate.Populator(*a, madvise=lambda address, length: 0))
    fresh = tempfile.NamedTemporaryFile(dir=os.path.dirname(kv_file), delete=False)
    os.posix_fallocate(fresh.fileno(), 0, BLOCKS * G.block_bytes)
    fresh.close()
    blocks = unpopulated_files.blocks(fresh.name, BLOCKS * G.block_bytes, G, torch.bfloat16)
    wait_done(populator_of(unpopulated_files, fresh.name))
    unpopulated = faults_writing(blocks)
    unpopulated_files.close()

    assert populated < pages // 20, f"{populated} faults writing {pages} populated pages"
    assert unpopulated > pages // 2, f"{unpopulated} faults writing {pages} pages nobody populated"


def test_a_kernel_without_populate_costs_only_the_speed_up(kv_file, caplog):
    files = KvFiles(populator=lambda *a: populate.Populator(*a, madvise=lambda address, length: errno.EINVAL))
    with caplog.at_level(logging.INFO, logger="vllm.pd_connector"):
        blocks = files.blocks(kv_file, BLOCKS * G.block_bytes, G, torch.bfloat16)
        assert populator_of(files, kv_file).stop()
    blocks[3].fill_(2.0)
    assert float(blocks[3].float().mean()) == 2.0
    files.close()
    assert [r.getMessage() for r in caplog.records] == [
        f"{kv_file} not populated (the kernel has no MADV_POPULATE_WRITE (Linux < 5.14)): the first copy into "
        "each of its pages faults it in"]


def test_closing_the_files_stops_their_populating_threads(kv_file):
    calls = []

    def slow(address, length):
        calls.append(length)
        time.sleep(0.05)
        return 0

    files = KvFiles(populator=lambda mapping, address, size, what: populate.Populator(
        mapping, address, 1 << 40, what, madvise=slow))   # far more chunks than the test waits for
    files.blocks(kv_file, BLOCKS * G.block_bytes, G, torch.bfloat16)
    deadline = time.monotonic() + 5
    while not calls and time.monotonic() < deadline:   # the thread under way, however late it was started
        time.sleep(0.01)
    files.close()
    assert not [t for t in threading.enumerate() if t.name == "pd-populate"]
    assert 1 <= len(calls) < 100
