"""User text (file names, patient ids, code names) is never rendered as Markdown (issue 11, defect 5)."""
from __future__ import annotations

from app_helpers import PAGES, assert_clean, go, open_page

from favmac.ui.text import md

LINK = "[click me](https://x)"
BOLD = "__import__"
WIDE = (
    f"patient_id,prob_{BOLD},label_{BOLD},prob_B,label_B\n".encode()
    + b"".join(f"{LINK if i == 50 else f'P{i:03d}'},{(i % 10) / 10},{i % 2},{(i % 7) / 7:.4f},{(i // 2) % 2}\n".encode() for i in range(60))
)
NAME = f"{BOLD} {LINK}.csv"


def markdown_sources(at) -> list[str]:
    """The Markdown source of every element Streamlit renders as Markdown."""
    out = []
    for kind in ("markdown", "caption", "error", "warning", "info", "success", "title", "header", "subheader"):
        out += [str(e.value) for e in at.get(kind)]
    out += [str(e.label) for e in at.metric]
    return out


def test_md_escapes_links_and_emphasis():
    assert md(LINK) == r"\[click me\](https\://x)"
    assert md("1. not a list") == r"1\. not a list" and md("# not a heading") == r"\# not a heading"
    assert md(BOLD) == r"\_\_import\_\_"
    assert md("a\nb") == "a b"


def test_file_names_ids_and_codes_are_escaped_on_every_page():
    at = open_page("data")
    at.file_uploader(key="upload_wide").set_value((NAME, WIDE, "text/csv"))
    at.run()
    assert at.session_state["dataset"].name == NAME
    for page in PAGES:
        go(at, page)
        assert not at.exception, (page, [e.value for e in at.exception])
        if page == "patients":
            at.selectbox(key="patient_select").set_value(LINK).run()
        sources = markdown_sources(at)
        assert any(md(NAME) in s for s in sources + [c.value for c in at.sidebar.caption]) or page not in ("home", "data"), page
        for s in sources + [c.value for c in at.sidebar.caption]:
            assert LINK not in s and BOLD not in s, (page, s)
    assert any(md(LINK) in s for s in markdown_sources(at))  # the Patients caption names the patient
    # a DataError quoting a cell: the cell is escaped too
    go(at, "data")
    at.file_uploader(key="upload_wide").set_value(("bad.csv", WIDE.replace(b",0.5,", b",**0.5**,", 1), "text/csv"))
    at.run()
    errors = [e.value for e in at.error]
    assert errors and all("**0.5**" not in e for e in errors) and any(r"\*\*0.5\*\*" in e for e in errors), errors
