"""Loaded by every Python process of a vLLM instance the e2e fleet starts without the pd-connector plugin (no
connector, stock NixlConnector): asks Linux for the AMX tile registers, as the plugin's worker does itself
(pd_connector_vllm.cpu_tiles says why), so stock fleets run on AMX hosts too."""
from pd_connector_vllm.cpu_tiles import request_amx_tiles

request_amx_tiles()
