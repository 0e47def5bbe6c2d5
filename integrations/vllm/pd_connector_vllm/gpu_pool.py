"""pd-connector's VRAM pool as the plugin sees it (docs/gpu.md): a CUDA IPC mapping of the memory
pd-connector allocated on the engine's GPU (cuMemAlloc_v2 in the GPU's primary context), registered with NIXL
as VRAM and exported with cuIpcGetMemHandle. The plugin opens the 64-byte handle here, in vLLM's process, on
the GPU whose UUID pd-connector names, and copies between vLLM's cache and the pool (gpu_layout.BlockCopier).

One owner, one release path: an IpcPool owns its mapping (cuIpcOpenMemHandle_v2) and the primary-context
retain it took for it; ``close()`` gives both back, in reverse, once, and refuses while a tensor view of the
pool is still alive (the memory would vanish under it). pd-connector must not free the pool before the
plugin closed it (CUDA's rule for legacy IPC), so the plugin closes first when either side stops.

PyTorch's expandable segments change how torch shares CUDA memory (VMM allocations, shareable only as POSIX
file descriptors, where UCX lost its cuda_ipc path and fell back to TCP): this plugin refuses to run with
them on (``refuse_expandable_segments``) instead of finding out from the transfer speed.

Only ctypes and torch: no CUDA toolkit, no cupy. The driver calls are libcuda.so.1's, by their versioned names.
"""

from __future__ import annotations

import ctypes
import gc
import os
import weakref
from typing import Mapping

import torch

LIBCUDA = "libcuda.so.1"
IPC_HANDLE_BYTES = 64
CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1


class GpuPoolError(RuntimeError):
    """The VRAM pool cannot be used here: the message says why, and nothing falls back to host memory."""


class PoolInUse(GpuPoolError):
    """close() while a tensor of the pool is alive."""


def expandable_segments(environ: Mapping[str, str] = os.environ) -> str | None:
    """The setting that turns PyTorch's expandable segments on, or None. Read from both of torch's variables
    (PYTORCH_CUDA_ALLOC_CONF, PYTORCH_ALLOC_CONF), where a later key wins as torch parses them."""
    found = None
    for var in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"):
        for item in environ.get(var, "").split(","):
            key, _, value = item.partition(":")
            if key.strip() == "expandable_segments":
                found = f"{var}={environ[var]}" if value.strip().lower() == "true" else None
    return found


def refuse_expandable_segments(environ: Mapping[str, str] = os.environ) -> None:
    """Raises GpuPoolError if PyTorch's expandable segments are on (see the module comment)."""
    setting = expandable_segments(environ)
    if setting is not None:
        raise GpuPoolError(f"PyTorch's expandable segments are on ({setting}): they change how CUDA memory is "
                           "shared between processes (VMM handles, not cudaIpc handles; UCX fell back to TCP for them), "
                           "and pd-connector's VRAM pool refuses them rather than degrade silently; unset "
                           "expandable_segments or set it to False")


class CudaError(GpuPoolError):
    def __init__(self, call: str, status: int, name: str) -> None:
        super().__init__(f"{call} failed: {name} ({status})")
        self.call, self.status, self.name = call, status, name


class LibCuda:
    """libcuda.so.1 through ctypes: the calls the plugin makes (open, close) and those gpu-check's stand-in for
    pd-connector makes (alloc, export, free, copy), each checked: a non-zero CUresult raises CudaError."""

    def __init__(self, path: str = LIBCUDA) -> None:
        try:
            self._lib = ctypes.CDLL(path)
        except OSError as e:
            raise GpuPoolError(f"pd-connector's VRAM pool needs the CUDA driver library {path}, which this host "
                               f"does not have ({e})") from e
        self._check("cuInit", self._lib.cuInit(ctypes.c_uint(0)))

    def _check(self, call: str, status: int) -> None:
        if status != 0:
            name = ctypes.c_char_p()
            self._lib.cuGetErrorName(ctypes.c_int(status), ctypes.byref(name))
            raise CudaError(call, status, name.value.decode() if name.value else f"CUresult {status}")

    def device_count(self) -> int:
        n = ctypes.c_int()
        self._check("cuDeviceGetCount", self._lib.cuDeviceGetCount(ctypes.byref(n)))
        return n.value

    def device(self, ordinal: int) -> int:
        d = ctypes.c_int()
        self._check(f"cuDeviceGet({ordinal})", self._lib.cuDeviceGet(ctypes.byref(d), ctypes.c_int(ordinal)))
        return d.value

    def uuid(self, device: int) -> str:
        raw = (ctypes.c_ubyte * 16)()
        self._check("cuDeviceGetUuid_v2", self._lib.cuDeviceGetUuid_v2(raw, ctypes.c_int(device)))
        h = bytes(raw).hex()
        return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def retain_primary(self, device: int) -> int:
        ctx = ctypes.c_void_p()
        self._check("cuDevicePrimaryCtxRetain",
                    self._lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), ctypes.c_int(device)))
        return ctx.value

    def release_primary(self, device: int) -> None:
        self._check("cuDevicePrimaryCtxRelease_v2", self._lib.cuDevicePrimaryCtxRelease_v2(ctypes.c_int(device)))

    def set_current(self, ctx: int) -> None:
        self._check("cuCtxSetCurrent", self._lib.cuCtxSetCurrent(ctypes.c_void_p(ctx)))

    def ipc_open(self, handle: bytes) -> int:
        if len(handle) != IPC_HANDLE_BYTES:
            raise ValueError(f"a CUDA IPC handle is {IPC_HANDLE_BYTES} bytes, got {len(handle)}")
        ptr = ctypes.c_uint64()
        arg = _IpcHandle.from_buffer_copy(handle)
        self._check("cuIpcOpenMemHandle_v2", self._lib.cuIpcOpenMemHandle_v2(
            ctypes.byref(ptr), arg, ctypes.c_uint(CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)))
        return ptr.value

    def ipc_close(self, ptr: int) -> None:
        self._check("cuIpcCloseMemHandle", self._lib.cuIpcCloseMemHandle(ctypes.c_uint64(ptr)))

    # -- pd-connector's side (io.pdconnector.cuda.VramPool), for scripts/gpu/gpu_check.py where no JVM is ----------

    def alloc(self, nbytes: int) -> int:
        if nbytes <= 0:
            raise ValueError(f"cuMemAlloc_v2 needs a positive size, got {nbytes}")
        ptr = ctypes.c_uint64()
        self._check(f"cuMemAlloc_v2({nbytes} bytes)", self._lib.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(nbytes)))
        return ptr.value

    def free(self, ptr: int) -> None:
        self._check("cuMemFree_v2", self._lib.cuMemFree_v2(ctypes.c_uint64(ptr)))

    def memset(self, ptr: int, value: int, nbytes: int) -> None:
        self._check("cuMemsetD8_v2", self._lib.cuMemsetD8_v2(ctypes.c_uint64(ptr), ctypes.c_ubyte(value),
                                                             ctypes.c_size_t(nbytes)))

    def ipc_handle(self, ptr: int) -> bytes:
        out = _IpcHandle()
        self._check("cuIpcGetMemHandle", self._lib.cuIpcGetMemHandle(ctypes.byref(out), ctypes.c_uint64(ptr)))
        return bytes(out)

    def copy_to_host(self, ptr: int, nbytes: int) -> bytes:
        buf = ctypes.create_string_buffer(nbytes)
        self._check("cuMemcpyDtoH_v2", self._lib.cuMemcpyDtoH_v2(buf, ctypes.c_uint64(ptr), ctypes.c_size_t(nbytes)))
        return buf.raw

    def copy_from_host(self, ptr: int, data: bytes) -> None:
        self._check("cuMemcpyHtoD_v2", self._lib.cuMemcpyHtoD_v2(ctypes.c_uint64(ptr), data, ctypes.c_size_t(len(data))))


class _IpcHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * IPC_HANDLE_BYTES)]


class _CudaArray:
    """The mapping as __cuda_array_interface__ (v3, no stream: nothing to wait for), for torch.as_tensor. Torch
    keeps this object alive for as long as any tensor of the memory lives, which is how IpcPool.close sees them."""

    def __init__(self, ptr: int, nbytes: int) -> None:
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False), "version": 3,
                                         "strides": None}


class IpcPool:
    """pd-connector's VRAM pool, mapped into this process on the GPU ``gpu_uuid`` (the one vLLM's cache is on)."""

    def __init__(self, driver: "LibCuda", handle: bytes, nbytes: int, gpu_uuid: str, device: torch.device,
                 wrap=None) -> None:
        """Opens the pool. ``device`` is the torch device of vLLM's KV cache; its GPU must be ``gpu_uuid``.
        ``wrap`` (ptr, nbytes, device) -> (tensor, holder) is the tests' stand-in for the CUDA array wrapper."""
        refuse_expandable_segments()
        if nbytes <= 0:
            raise ValueError(f"a pool needs a positive size, got {nbytes}")
        self._driver = driver
        self._wrap = wrap or _wrap_cuda
        ordinal = device.index if device.index is not None else torch.cuda.current_device()
        self._device_handle = driver.device(ordinal)
        here = driver.uuid(self._device_handle)
        if here.lower()[4:] != gpu_uuid.lower()[4:]:
            raise GpuPoolError(f"pd-connector's VRAM pool is on GPU {gpu_uuid}, vLLM's KV cache on {here} (cuda:"
                               f"{ordinal} here): they must be the same GPU (pd.kv.gpu-uuid, and the GPU given to "
                               "both containers)")
        self._ctx = driver.retain_primary(self._device_handle)
        try:
            driver.set_current(self._ctx)
            self._ptr = driver.ipc_open(bytes(handle))
        except BaseException:
            driver.release_primary(self._device_handle)
            raise
        self._nbytes = nbytes
        self._device = torch.device("cuda", ordinal)
        tensor, holder = self._wrap(self._ptr, nbytes, self._device)
        self._bytes: torch.Tensor | None = tensor
        # every wrapper object torch keeps alive while a tensor of the memory lives
        self._holders = [weakref.ref(holder)]
        del holder
        self._closed = False

    @property
    def nbytes(self) -> int:
        return self._nbytes

    def blocks(self, dtype: torch.dtype, block_shape: tuple[int, ...]) -> torch.Tensor:
        """The pool as (num_blocks, *block_shape) of ``dtype`` (pd-connector's block layout), a view."""
        if self._closed or self._bytes is None:
            raise GpuPoolError("the VRAM pool is closed")
        per_block = torch.empty((), dtype=dtype).element_size()
        for n in block_shape:
            per_block *= n
        if self._nbytes % per_block:
            raise GpuPoolError(f"a pool of {self._nbytes} bytes is not a whole number of {per_block}-byte blocks")
        return self._bytes.view(dtype).view(self._nbytes // per_block, *block_shape)

    def close(self) -> None:
        """Unmaps the pool and releases the context retain, once; refuses while a view of it is alive."""
        if self._closed:
            return
        if self._device.type == "cuda" and torch.cuda.is_available():
            torch.cuda.synchronize(self._device)  # no copy on any stream still reads or writes the pool
        self._bytes = None
        gc.collect()
        alive = [h for h in self._holders if h() is not None]
        if alive:
            tensor, holder = self._wrap(self._ptr, self._nbytes, self._device)
            self._bytes = tensor
            self._holders = alive + [weakref.ref(holder)]
            raise PoolInUse("a tensor of pd-connector's VRAM pool is still alive: drop every view (and wait for "
                            "copies on it) before closing; the pool stays mapped")
        self._closed = True
        try:
            self._driver.set_current(self._ctx)
            self._driver.ipc_close(self._ptr)
        finally:
            self._driver.release_primary(self._device_handle)


def _wrap_cuda(ptr: int, nbytes: int, device: torch.device):
    holder = _CudaArray(ptr, nbytes)
    tensor = torch.as_tensor(holder, device=device)
    if tensor.data_ptr() != ptr:
        raise GpuPoolError("torch copied the VRAM pool instead of viewing it")
    return tensor, holder
