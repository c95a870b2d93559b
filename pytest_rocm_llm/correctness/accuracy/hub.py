"""Tables of Hugging Face Hub datasets, fetched at a pinned commit into the Hub's own cache.

huggingface_hub does the caching, HF_HUB_CACHE / HF_HUB_OFFLINE / HF_ENDPOINT / tokens and
the file locks between concurrent workers; pyarrow reads the parquet the Hub stores tables
in. Both are imported here only, when data must come from the Hub, so loading the plugin
(or using a local data directory) needs neither.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pytest_rocm_llm.errors import DatasetUnavailable
from pytest_rocm_llm.excerpt import clip


@dataclass(frozen=True)
class HubFile:
    """A table in a Hub dataset repository whose rows, written as JSON lines with these
    columns, are a DataFile's content."""

    repo: str
    # A commit, never a branch: a moved branch would change the items under stored baselines.
    revision: str
    filename: str
    columns: tuple[str, ...]

    @property
    def url(self) -> str:
        return f"hf://datasets/{self.repo}@{self.revision}/{self.filename}"


def fetch(hub: HubFile, what: str, override: str) -> Path:
    """The cached copy of ``hub``: no network when the cache has that commit's file."""
    try:
        import huggingface_hub
        from huggingface_hub.errors import EntryNotFoundError
    except ImportError:
        raise DatasetUnavailable(
            f"{what}: fetching {hub.url} needs huggingface_hub and pyarrow (pip install "
            f"huggingface_hub pyarrow); or pass {override}") from None
    try:  # the local cache first: a pinned commit's cached file needs no network
        return Path(huggingface_hub.hf_hub_download(
            hub.repo, hub.filename, repo_type="dataset", revision=hub.revision,
            local_files_only=True))
    except (EntryNotFoundError, OSError):
        pass
    try:
        if not huggingface_hub.is_offline_mode():
            # One quick look before huggingface_hub's own retries (about 30 s on a node with
            # no route): an air-gapped node learns it at once, before any launch.
            _reachable(huggingface_hub.constants.ENDPOINT)
        return Path(huggingface_hub.hf_hub_download(
            hub.repo, hub.filename, repo_type="dataset", revision=hub.revision))
    except (EntryNotFoundError, OSError) as exc:
        # Every way the Hub can fail lands here: offline, no route, not found, refused.
        why = ("HF_HUB_OFFLINE is set" if huggingface_hub.is_offline_mode()
               else f"{type(exc).__name__}: {clip(str(exc).strip().splitlines()[0])}"
               if str(exc).strip() else type(exc).__name__)
        raise DatasetUnavailable(
            f"{what}: {hub.url} is not in the Hugging Face cache "
            f"({huggingface_hub.constants.HF_HUB_CACHE}) and could not be downloaded ({why}). "
            f"Fetch it once where the Hub is reachable (hf download {hub.repo} {hub.filename} "
            f"--repo-type dataset --revision {hub.revision}), or pass {override}") from None


def _reachable(endpoint: str, timeout_s: float = 5.0) -> None:
    """Raises OSError when ``endpoint`` cannot be reached at all (no name, no route)."""
    import httpx

    try:
        httpx.head(endpoint, timeout=timeout_s)
    except httpx.TransportError as exc:
        raise OSError(f"{endpoint} unreachable: {type(exc).__name__}: {exc}") from None


def rows_as_jsonl(path: Path, columns: tuple[str, ...], what: str, origin: str) -> bytes:
    """The table's rows as JSON lines, in table order. json.dumps' defaults (ASCII escapes,
    ", " and ": ") are how the GSM8K release writes its lines, so a table holding the
    release's rows gives back the release's bytes and its sha256."""
    try:
        import pyarrow
        import pyarrow.parquet as pq
    except ImportError:
        raise DatasetUnavailable(f"{what}: reading {origin} needs pyarrow (pip install "
                                 f"pyarrow)") from None
    try:
        rows = pq.read_table(path, columns=list(columns)).to_pylist()
    except (pyarrow.ArrowException, OSError, ValueError) as exc:
        raise DatasetUnavailable(f"{what}: {origin} is not a parquet table with columns "
                                 f"{', '.join(columns)} ({type(exc).__name__})") from None
    return "".join(json.dumps({c: row[c] for c in columns}) + "\n" for row in rows).encode()


def fetch_rows_as_jsonl(hub: HubFile, what: str, override: str) -> tuple[str, bytes]:
    """(where it came from, its rows as JSON lines)."""
    path = fetch(hub, what, override)
    origin = f"{hub.url} (cached at {path}), as JSON lines,"
    return origin, rows_as_jsonl(path, hub.columns, what, origin)
