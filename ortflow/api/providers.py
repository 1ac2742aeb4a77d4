"""Execution providers, for stages that create ONNX Runtime sessions: which of the requested providers ORT can
really use here (and how to install the others), and a recipe's provider list as names or as a session's
`providers` argument, and whether a provider list runs on the CUDA provider (whose build, `cuda_provider`, a
stage on it names in `env_facts`). Part of the stable plugin API (see ortflow.api)."""

from ortflow.engine.leaves.cuda_provider import uses_cuda
from ortflow.engine.ort.providers import ProviderCheck, for_session, names, resolve

__all__ = ["ProviderCheck", "for_session", "names", "resolve", "uses_cuda"]
