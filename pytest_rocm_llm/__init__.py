"""pytest-rocm-llm: a conformance gate for LLM serving on AMD GPUs.

Importing this package (and loading the plugin) imports no engine, torch or allure: engines
run in their own environments and are driven over HTTP.
"""

__version__ = "0.1.0"
