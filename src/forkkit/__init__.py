"""forkkit: keep one upstream bug-fix alive as a patch series over pinned vLLM."""

__version__ = "0.1.0"
