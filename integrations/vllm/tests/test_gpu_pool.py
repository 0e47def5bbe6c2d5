"""The plugin's side of pd-connector's VRAM pool on a host without a GPU: the refusals (expandable segments,
another GPU than the pool's, no libcuda) and the mapping's one release path, over a fake driver whose
'device memory' is host memory. Opening a real pool exported by another process is scripts/gpu-check.sh's."""

import ctypes

import numpy as np
import pytest
import torch

from pd_connector_vllm.gpu_pool import (
    GpuPoolError,
    IpcPool,
    LibCuda,
    PoolInUse,
    expandable_segments,
    refuse_expandable_segments,
)

UUID = "GPU-1f2e3d4c-0000-4000-8000-00000000000a"
OTHER = "GPU-1f2e3d4c-0000-4000-8000-00000000000b"


class FakeDriver:
    def __init__(self, uuid=UUID, fail_open=False):
        self.uuid_of = uuid
        self.fail_open = fail_open
        self.calls = []
        self.retains = 0
        self.mapped = {}

    def device(self, ordinal):
        self.calls.append("cuDeviceGet")
        return 100 + ordinal

    def uuid(self, device):
        self.calls.append("cuDeviceGetUuid_v2")
        return self.uuid_of

    def retain_primary(self, device):
        self.calls.append("cuDevicePrimaryCtxRetain")
        self.retains += 1
        return 0xC0000

    def release_primary(self, device):
        self.calls.append("cuDevicePrimaryCtxRelease_v2")
        self.retains -= 1

    def set_current(self, ctx):
        self.calls.append("cuCtxSetCurrent")

    def ipc_open(self, handle):
        self.calls.append("cuIpcOpenMemHandle_v2")
        if self.fail_open:
            raise GpuPoolError("cuIpcOpenMemHandle_v2 failed: CUDA_ERROR_INVALID_VALUE (1)")
        memory = np.zeros(1 << 16, dtype=np.uint8)
        self.mapped[memory.ctypes.data] = memory
        return memory.ctypes.data

    def ipc_close(self, ptr):
        self.calls.append("cuIpcCloseMemHandle")
        del self.mapped[ptr]


def fake_wrap(ptr, nbytes, device):
    """The CPU stand-in for torch.as_tensor(__cuda_array_interface__): a tensor over the memory at ptr, kept
    alive by a holder object the tensor references (as torch keeps the CUDA array object)."""
    holder = np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(ptr))
    return torch.from_numpy(holder), holder


def open_pool(driver, **kw):
    return IpcPool(driver, bytes(64), 1 << 16, kw.pop("uuid", UUID), torch.device("cuda", 0), wrap=fake_wrap, **kw)


def test_expandable_segments_are_found_in_either_variable_and_refused():
    assert expandable_segments({}) is None
    assert expandable_segments({"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:128"}) is None
    assert expandable_segments({"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:False"}) is None
    on = {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:64, expandable_segments:True"}
    assert expandable_segments(on) == "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:64, expandable_segments:True"
    assert expandable_segments({"PYTORCH_ALLOC_CONF": "expandable_segments:true"}) is not None
    assert expandable_segments({"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
                                "PYTORCH_ALLOC_CONF": "expandable_segments:False"}) is None, "the later one wins"
    with pytest.raises(GpuPoolError, match="expandable segments are on .*refuses them rather than degrade silently"):
        refuse_expandable_segments(on)


def test_a_pool_is_not_opened_with_expandable_segments_on(monkeypatch):
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    driver = FakeDriver()
    with pytest.raises(GpuPoolError, match="expandable segments"):
        open_pool(driver)
    assert driver.calls == []


def test_a_pool_on_another_gpu_than_vllms_cache_is_refused_holding_nothing():
    driver = FakeDriver(uuid=OTHER)
    with pytest.raises(GpuPoolError, match=f"pool is on GPU {UUID}, vLLM's KV cache on {OTHER}"):
        open_pool(driver)
    assert driver.retains == 0 and "cuIpcOpenMemHandle_v2" not in driver.calls


def test_a_failed_open_gives_the_context_back():
    driver = FakeDriver(fail_open=True)
    with pytest.raises(GpuPoolError, match="cuIpcOpenMemHandle_v2"):
        open_pool(driver)
    assert driver.retains == 0


def test_the_mapping_has_one_release_path_and_refuses_it_while_a_view_lives():
    driver = FakeDriver()
    pool = open_pool(driver)
    assert driver.retains == 1 and len(driver.mapped) == 1
    blocks = pool.blocks(torch.float32, (2, 2, 4, 8))  # (num_blocks, L, 2, H... any block shape)
    assert blocks.shape == ((1 << 16) // (2 * 2 * 4 * 8 * 4), 2, 2, 4, 8)
    blocks[3].fill_(7)
    with pytest.raises(PoolInUse, match="still alive"):
        pool.close()
    assert len(driver.mapped) == 1 and driver.retains == 1, "the pool stays mapped under the live view"
    assert float(pool.blocks(torch.float32, (2, 2, 4, 8))[3].sum()) == 7 * 2 * 2 * 4 * 8, "and stays usable"
    del blocks
    driver.calls.clear()
    pool.close()
    assert driver.calls == ["cuCtxSetCurrent", "cuIpcCloseMemHandle", "cuDevicePrimaryCtxRelease_v2"]
    assert driver.mapped == {} and driver.retains == 0
    pool.close()
    assert driver.calls.count("cuIpcCloseMemHandle") == 1, "closed once"
    with pytest.raises(GpuPoolError, match="closed"):
        pool.blocks(torch.float32, (2, 2, 4, 8))


def test_a_pool_that_is_no_whole_number_of_blocks_is_refused():
    pool = open_pool(FakeDriver())
    with pytest.raises(GpuPoolError, match="not a whole number"):
        pool.blocks(torch.float32, (3, 5))
    pool.close()


def test_without_libcuda_the_driver_says_so():
    try:
        ctypes.CDLL("libcuda.so.1")
        pytest.skip("DID NOT RUN: this host has libcuda.so.1 (the no-driver sentence is proven only where there is none)")
    except OSError:
        pass
    with pytest.raises(GpuPoolError, match="needs the CUDA driver library libcuda.so.1, which this host does not have"):
        LibCuda()
