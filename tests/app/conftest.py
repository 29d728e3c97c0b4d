"""Fixtures for the AppTest suite (helpers live in app_helpers.py)."""
from __future__ import annotations

import pytest
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

import app_helpers  # noqa: F401  (puts the repository on sys.path)


@pytest.fixture(autouse=True)
def no_server_warm_up(monkeypatch):
    """No kernel warm-up in the test process (``favmac.ui.bootstrap``: the first page run of a server starts
    one, which here would compete with the tests; the run's own warm-up has filled numba's disk cache)."""
    from favmac.ui import bootstrap

    monkeypatch.setenv(bootstrap.WARM_UP_ENV, "off")


@pytest.fixture(autouse=True)
def jobs_in_the_foreground(monkeypatch):
    """AppTest has no timer to follow a background job: pages wait for their jobs here.
    A test of the background behaviour sets ``favmac.ui.jobs.FOREGROUND_SECONDS`` itself."""
    from favmac.ui import jobs

    monkeypatch.setattr(jobs, "FOREGROUND_SECONDS", 300.0)


@pytest.fixture(autouse=True)
def own_store(tmp_path, monkeypatch):
    """Each test's app uses a store of its own (``FAVMAC_STORE``: a SQLite file in the test's tmp_path),
    so one test's saved workspace is never another's start (favmac.ui.store opens one store per URL)."""
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    monkeypatch.setenv("FAVMAC_STORE", url)
    return url


@pytest.fixture
def downloads(monkeypatch):
    """Bytes handed to ``st.download_button``, by file name (captured from the media store)."""
    captured: dict[str, bytes] = {}
    original = MemoryMediaFileStorage.load_and_get_id

    def record(self, path_or_data, mimetype, kind, filename=None):
        if filename is not None and isinstance(path_or_data, (bytes, str)):
            captured[filename] = path_or_data if isinstance(path_or_data, bytes) else path_or_data.encode()
        return original(self, path_or_data, mimetype, kind, filename)

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", record)
    return captured


@pytest.fixture
def few_orderings(monkeypatch):
    """The Validity page's check with 40 random orderings instead of its minimum of 200 (``validity.MIN_ORDERINGS``,
    also the page's default): for tests of what the page says (units, labels), where the number of orderings is not
    the point; 200 orderings of the payment value on the sample take about a minute here."""
    from favmac import validity
    from favmac.ui import validity as validity_view

    monkeypatch.setattr(validity, "MIN_ORDERINGS", 40)
    monkeypatch.setattr(validity_view, "MIN_ORDERINGS", 40)
    return 40

