"""The AMX tile registers vLLM's CPU attention needs (pd_connector_vllm.cpu_tiles): asked for once per process."""
import subprocess
import sys
from pathlib import Path

PLUGIN_DIR = Path(__file__).resolve().parents[1]


def cpu_has_amx_tiles() -> bool:
    with open("/proc/cpuinfo") as f:
        return any(line.startswith("flags") and " amx_tile" in line for line in f)


def test_a_fresh_process_gets_the_tiles_when_it_asks_where_the_cpu_has_them():
    # a fresh process: the permission is per process and cannot be dropped once granted
    probe = ("from pd_connector_vllm.cpu_tiles import amx_tiles_permitted, request_amx_tiles; "
             "before = amx_tiles_permitted(); granted = request_amx_tiles(); "
             "print(before, granted, amx_tiles_permitted())")
    out = subprocess.run([sys.executable, "-c", probe], cwd=PLUGIN_DIR, capture_output=True, text=True, timeout=60,
                         check=True).stdout.split()
    has = cpu_has_amx_tiles()
    assert out == ["False", str(has), str(has)], f"before, granted, after on a CPU {'with' if has else 'without'} AMX"


def test_the_e2e_fleets_instances_without_the_plugin_ask_for_them_too():
    site = PLUGIN_DIR / "e2e/amx_site"
    out = subprocess.run([sys.executable, "-c", "from pd_connector_vllm.cpu_tiles import amx_tiles_permitted; "
                          "print(amx_tiles_permitted())"], cwd=PLUGIN_DIR, capture_output=True, text=True, timeout=60,
                         check=True, env={"PYTHONPATH": f"{PLUGIN_DIR}:{site}", "PATH": "/usr/bin:/bin"}).stdout.split()
    assert out == [str(cpu_has_amx_tiles())]
