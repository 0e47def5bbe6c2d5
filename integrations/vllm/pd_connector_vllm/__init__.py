"""vLLM KV-connector plugin for pd-connector (see connector.PdConnector)."""

__version__ = "0.1.0"
