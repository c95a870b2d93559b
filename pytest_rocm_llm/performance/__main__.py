"""``python -m pytest_rocm_llm.performance``: run one workload against a server, no pytest."""

import sys

from pytest_rocm_llm.performance.loadgen import main

sys.exit(main())
